package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeKilledWithoutSpoolLeavesItsBundleCopiesForever: without
// --spool, 'ampbundle serve' exported every served bundle file, up to
// 1 GiB each, into a fresh folder of $TMPDIR (ampbundle-mirror-*) that it
// removed at a graceful stop only: a serve killed (a restart by a
// supervisor, the OOM killer, a reboot without a tmpfs /tmp) left its
// copies there, and nothing ever removed them; a station restarted now
// and then over years filled its disk. Should: the default spool is a
// folder of the process's own in DB.mirror/, locked while it runs, and
// each start removes the folders of the serves that ended without
// removing theirs (the killed one stands here as a folder whose lock no
// one holds, with a bundle copy and an export's temporary file); nothing
// of it is served, and nothing is copied to $TMPDIR.
func TestServeKilledWithoutSpoolLeavesItsBundleCopiesForever(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	db := storeWithSamples(t)
	killed := filepath.Join(db+".mirror", "run-1")
	if err := os.MkdirAll(killed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(killed+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	copyLeft := filepath.Join(killed, strings.Repeat("ab", 32)+".bundle")
	for _, f := range []string{copyLeft, filepath.Join(killed, ".export-1234.tmp")} {
		if err := os.WriteFile(f, bytes.Repeat([]byte{'x'}, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	url := startMirrorCLI(t, db)
	for _, p := range []string{killed, killed + ".lock"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, left by a killed serve, is still there after the next start", p)
		}
	}
	want, err := os.ReadFile(sampleFile("translate"))
	if err != nil {
		t.Fatal(err)
	}
	if code, got := httpGet(t, url+"/bundles/"+translateID); code != 200 || !bytes.Equal(got, want) {
		t.Fatalf("/bundles/%s: status %d, %d bytes, want the %d bytes of the sample file", translateID, code, len(got), len(want))
	}
	left, err := filepath.Glob(filepath.Join(tmp, "ampbundle-mirror-*"))
	if err != nil || len(left) != 0 {
		t.Fatalf("bundle copies in $TMPDIR, which no later start removes: %v %v", left, err)
	}
}
