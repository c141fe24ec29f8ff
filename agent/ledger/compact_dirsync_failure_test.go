package ledger

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestCompactionDirSyncFailureBreaksTheStore: a compaction renames its new
// file over the log and syncs the directory so that the rename survives a
// crash. Attack (a disk or file system failing under load; no caller
// needed, a caller's churn makes compactions frequent): the directory
// sync fails. Before the fix the failure was ignored, the group that
// followed was written into the new file and acknowledged, though after a
// crash the directory may still name the old file, without that group: a
// retry of an acknowledged invocation would find no record and run its
// handler again. What should happen (docs/SPEC-DECISIONS.md AGENT-19): the
// write that needed the compaction fails, and the store refuses every
// write until it is reopened, as after a failed fdatasync.
func TestCompactionDirSyncFailureBreaksTheStore(t *testing.T) {
	c := newClock()
	s := openTestWAL(t, filepath.Join(t.TempDir(), "l.wal"), c, WALOptions{Slack: 1})
	defer s.Close()
	failing := errors.New("injected: directory sync failed")
	s.syncDir = func(string) error { return failing }
	k := Key{Sender: "did:key:zCaller", ID: id(1)}
	var err error
	for i := 0; i < 8 && err == nil; i++ {
		k.ID = id(i)
		err = s.MarkRunning(k, c.Now().Add(time.Hour))
	}
	if err == nil {
		t.Fatalf("every write was acknowledged though the directory sync after compaction failed (%d compactions)", s.compactions.Load())
	}
	if amp.NameOf(err) != ErrLedgerIO {
		t.Fatalf("the write after a failed directory sync failed with %v, want %s", err, ErrLedgerIO)
	}
	s.syncDir = func(string) error { return nil }
	k.ID = id(100)
	if err := s.MarkRunning(k, c.Now().Add(time.Hour)); amp.NameOf(err) != ErrLedgerIO {
		t.Fatalf("a write after the failed directory sync got %v, want %s until the agent restarts", err, ErrLedgerIO)
	}
}
