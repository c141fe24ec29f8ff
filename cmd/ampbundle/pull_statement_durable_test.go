package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPulledStatementsNameIsDurableWhenPullReturns: the failure.
// pullStatement synced the statement's file, then renamed it into place
// without syncing the folder: after a power loss the file system could
// keep the old file, or none, at the name `ampbundle pull` reported
// written. The folder is now synced after the rename, before the pull
// returns, as a bundle's (ocitransport's PullFile) and a tar's Commit
// are; a folder that cannot be synced is io_error, the file left at its
// name (docs/SPEC-DECISIONS.md OCI-26).
func TestPulledStatementsNameIsDurableWhenPullReturns(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "statement.json")
	var synced []string
	err := writePulled([]byte(`{"statement":1}`), out, func(d string) error {
		if b, err := os.ReadFile(out); err != nil || string(b) != `{"statement":1}` {
			t.Errorf("the folder was synced before the statement was renamed into place (%v)", err)
		}
		synced = append(synced, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Errorf("folders synced %v, want [%s]: the new name's folder synced after the rename", synced, dir)
	}

	err = writePulled([]byte(`{"statement":2}`), out, func(string) error { return errors.New("no sync here") })
	if name := errName(err); name != "io_error" {
		t.Errorf("a folder that cannot be synced: %v (%s), want io_error", err, name)
	}
	if b, _ := os.ReadFile(out); string(b) != `{"statement":2}` {
		t.Errorf("the statement renamed into place is %q, want it left at its name", b)
	}
}
