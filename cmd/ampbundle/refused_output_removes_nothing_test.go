package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOutputRefusedAsExistingRemovesNoLeftover: an export or join refused
// because its output exists (file_exists, no --force) removed the killed
// runs' leftovers of the folder first: a side effect before the check
// that refuses the command. A refused command now changes nothing; the
// next one that writes there removes them (BUILD-13 amended).
func TestOutputRefusedAsExistingRemovesNoLeftover(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	db := storeWithSamples(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "t.ampb")
	if err := os.WriteFile(out, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	ours, _ := leftovers(t, dir)
	r := runCLI(t, nil, "export", translateID, "--db", db, "-o", out, "--json")
	if r.code == 0 || errorCode(t, r) != "file_exists" {
		t.Fatalf("export over an existing file: exit %d, %s", r.code, r.stdout)
	}
	for _, p := range ours {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the refused export removed %s", filepath.Base(p))
		}
	}
}
