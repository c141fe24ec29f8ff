package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestAnotherMirrorsPartialHeadRefusesAGenuineFilePastTheCap: past
// MaxStoreRefusals a bundle file is judged by its head (MIRROR-18), and
// the spool names a partial file by bundle_id and SHA-256 only. A hostile
// mirror that lists an honest one's genuine file (its index is public) and
// cuts its answer after the head of a bundle of the same line and version
// signed by a key the host does not trust leaves that head in the spool;
// the honest mirror's next run, past the cap (a station holding several
// vendors' bundles), would refuse the genuine file from those bytes as
// not signed as the store requires, and remember the refusal for a day,
// renewed by every run of the hostile mirror. Should: bytes kept from an
// earlier download that fail the check are discarded and the mirror's own
// head read; the genuine file is imported.
func TestAnotherMirrorsPartialHeadRefusesAGenuineFilePastTheCap(t *testing.T) {
	own := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	station := filepath.Join(t.TempDir(), "station.db")
	st, err := resolver.Open(station, resolver.Options{Create: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]ed25519.PrivateKey{"own": own, "example": testKey} {
		if err := st.TrustAdd(name, k.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	files := [][]byte{}
	for i := range MaxStoreRefusals {
		files = append(files, paddedBundle(t, fmt.Sprintf("org.example.b%03d", i), own, 0))
	}
	genuine := paddedBundle(t, "org.example.z", testKey, 4096)
	for _, f := range append(files, genuine) {
		if _, err := st.Import(context.Background(), bytes.NewReader(f), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	_, ts := startMirror(t, station, nil)
	s := agentStore(t) // trusts testKey only
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	forged := paddedBundle(t, "org.example.z", own, 4096)
	part := filepath.Join(spool, partName(IndexEntry{BundleID: "org.example.z", SHA256: sum(genuine)}))
	if err := os.WriteFile(part, forged[:len(forged)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.Now = func() time.Time { return testNow } })
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range rep.Items {
		if it.BundleID == "org.example.z" {
			found = true
			if it.Outcome != OutcomeImported {
				t.Fatalf("the genuine file, past the cap, after another mirror's partial head: %+v", it)
			}
		}
	}
	if !found {
		t.Fatalf("the genuine file is not in the report: %+v", rep.Items)
	}
}
