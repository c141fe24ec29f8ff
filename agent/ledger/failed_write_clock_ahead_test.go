package ledger

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestFailedWriteWithClockAheadNeverDropsWhatARestartSetAside: after a
// restart with the wall clock ahead, the entries set aside (AGENT-22) are
// kept across the next restart only while the log's modification time
// stays on the clock they are judged by: each group stamps it so
// (AGENT-27), but only a group that succeeded did. Attack (no caller
// needed beyond one invocation at the wrong moment): a group is written
// and its fdatasync fails (an I/O error; or a disk full while the zeros
// after the log are written): the kernel has stamped the log with the
// clock that is ahead, the store refuses everything until it is opened
// again, and the operator restarts the agent before the clock is
// corrected. That open read the kernel's stamp as the log's last write
// and dropped the entries the first restart had set aside; once the clock
// was corrected, a retry got Fresh and the handler ran a second time.
// Now (AGENT-27, amended in review 114) every group that touched the file
// is stamped, a failed one too.
func TestFailedWriteWithClockAheadNeverDropsWhatARestartSetAside(t *testing.T) {
	c := newRestartClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	var failing atomic.Bool
	open := func() *WALStore {
		t.Helper()
		o := c.opts(Limits{})
		o.Now = c.wall.Now
		s, err := openWAL(path, o, func(*os.File) error {
			if !failing.Load() {
				return nil
			}
			// The write before this fdatasync stamped the log with the
			// wall clock (the kernel's stamp, from the injected clock).
			if err := os.Chtimes(path, time.Time{}, c.wall.Now()); err != nil {
				t.Error(err)
			}
			return syscall.EIO
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	k := Key{Sender: "did:key:zVictim", ID: id(1)}
	c.recordRun(t, path, open, k, []byte("ran once"))

	c.tick(time.Hour+10*time.Second, 10*time.Second) // the first restart, an hour ahead
	s := open()
	if _, found, err := s.Lookup(k); err != nil || !found {
		s.Close()
		t.Fatalf("setup: the first restart did not set the entry aside (%v, %v)", found, err)
	}
	c.tick(20*time.Second, 20*time.Second)
	failing.Store(true)
	if err := s.MarkRunning(Key{Sender: "did:key:zOther", ID: id(2)}, c.wall.Now().Add(runLifetime)); err == nil {
		s.Close()
		t.Fatal("setup: a write whose fdatasync failed was acknowledged")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	failing.Store(false)

	c.tick(10*time.Second, 10*time.Second) // the second restart, still ahead
	s = open()
	defer s.Close()
	if rec, found, err := s.Lookup(k); err != nil || !found || string(rec.Reply) != "ran once" {
		t.Fatalf("after a failed write and a second restart with the clock still ahead the entry is %v (%v): "+
			"a retry once the clock is corrected would run the handler a second time", found, err)
	}
}
