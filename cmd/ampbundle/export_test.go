package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestExportByteIdentical: an export is the imported file, byte for byte,
// and replaces an existing file with --force.
func TestExportByteIdentical(t *testing.T) {
	db := storeWithSamples(t)
	dir := t.TempDir()
	for _, c := range []struct{ id, sample string }{{translateID, "translate"}, {geoID, "geo"}} {
		want, err := os.ReadFile(sampleFile(c.sample))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, c.sample+".ampb")
		if err := os.WriteFile(out, []byte("old contents"), 0o644); err != nil {
			t.Fatal(err)
		}
		var res struct {
			BundleID string `json:"bundle_id"`
			File     string `json:"file"`
			Size     int    `json:"size"`
			SHA256   string `json:"sha256"`
		}
		mustJSON(t, &res, "export", "--db", db, "-o", out, "--force", c.id)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || res.Size != len(want) || res.BundleID != c.id || res.File != out || len(res.SHA256) != 64 {
			t.Fatalf("export of %s differs from %s (%+v)", c.id, c.sample, res)
		}
	}
	// The export imports again into another store as the same bundle.
	db2 := newStore(t)
	var res importJSON
	mustJSON(t, &res, "import", filepath.Join(dir, "translate.ampb"), "--db", db2)
	if res.BundleID != translateID || res.Version != 1 {
		t.Fatalf("re-import of an export: %+v", res)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("export left extra files: %v", entries)
	}
	// No such folder: nothing is written.
	failsWith(t, "io_error", "export", translateID, "--db", db, "-o", filepath.Join(dir, "none", "t.ampb"))
	if r := runCLI(t, nil, "export", translateID, "--db", db); r.code != 2 {
		t.Fatalf("export without -o: exit %d", r.code)
	}
}

// TestFailedClosedBundleIsNotExportedByMistake: a bundle the store fails
// closed (here after trust rm --fail-closed) is not exported, so that it is
// not carried to another site; --allow-failed-closed exports it, byte for
// byte; a bundle that does not fail closed is exported as before.
func TestFailedClosedBundleIsNotExportedByMistake(t *testing.T) {
	db := storeWithSamples(t)
	mustRun(t, "trust", "rm", "example", "--db", db, "--fail-closed")
	dir := t.TempDir()
	out := filepath.Join(dir, "translate.ampb")
	failsWith(t, "bundle_revoked", "export", translateID, "--db", db, "-o", out)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a refused export left %s (%v)", out, err)
	}
	mustRun(t, "export", translateID, "--db", db, "-o", out, "--allow-failed-closed")
	want, err := os.ReadFile(sampleFile("translate"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("export with --allow-failed-closed differs from the imported file (%v)", err)
	}
	mustRun(t, "export", geoID, "--db", db, "-o", filepath.Join(dir, "geo.ampb"))
}
