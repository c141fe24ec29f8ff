package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/mirror"
)

// TestServeMakesNoSpoolFolderBeforeEveryCheckPassed: 'ampbundle serve'
// made its default spool (DB.mirror/, MIRROR-34) and swept the folders of
// ended serves before it opened the store or its listeners: a typo'd
// --db left a new TYPO.mirror/ folder behind, and a serve that could not
// listen still removed what it took for killed serves' folders. Should:
// the spool is made only once the store was opened and every listener
// opened; a serve refused before that makes and removes nothing.
func TestServeMakesNoSpoolFolderBeforeEveryCheckPassed(t *testing.T) {
	t.Run("a typo'd --db", func(t *testing.T) {
		typo := filepath.Join(t.TempDir(), "stor.db")
		failsWith(t, "store_missing", "serve", "--db", typo)
		if _, err := os.Lstat(typo + ".mirror"); err == nil {
			t.Fatalf("%s.mirror was made for a store that does not exist", typo)
		}
	})
	t.Run("an address in use", func(t *testing.T) {
		db := storeWithSamples(t)
		killed := filepath.Join(db+".mirror", "run-1")
		mustNil(t, os.MkdirAll(killed, 0o700))
		mustNil(t, os.WriteFile(filepath.Join(killed, "ab.bundle"), []byte("a copy"), 0o600))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		mustNil(t, err)
		defer ln.Close()
		failsWith(t, "listen_failed", "serve", "--db", db, "--listen", ln.Addr().String())
		if _, err := os.Lstat(filepath.Join(killed, "ab.bundle")); err != nil {
			t.Fatalf("a serve that could not listen swept %s: %v", killed, err)
		}
		if made, _ := filepath.Glob(filepath.Join(db+".mirror", "run-*.lock")); len(made) != 0 {
			t.Fatalf("a serve that could not listen made %v", made)
		}
	})
}

// TestServeSpoolWithoutFileLocksSaysSo: where the file system of
// DB.mirror does not lock files, serve said "cannot create the spool
// folder", which the folder it had just made belied. Should: the refusal
// says the file system does not lock files, and hints at --spool.
func TestServeSpoolWithoutFileLocksSaysSo(t *testing.T) {
	err := mirrorSpoolRefusal("/srv/store.db.mirror", fmt.Errorf("locking: %w", mirror.ErrNoFileLocks))
	msg := amp.SafeMessage(err)
	if amp.NameOf(err) != "io_error" || !strings.Contains(msg, "does not lock files") || strings.Contains(msg, "cannot create") {
		t.Fatalf("refusal %s %q, want io_error saying the file system does not lock files", amp.NameOf(err), msg)
	}
	if strings.Contains(msg, "sync") {
		t.Fatalf("refusal %q speaks of the sync spool", msg)
	}
}

// mustNil fails the test at once on err.
func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
