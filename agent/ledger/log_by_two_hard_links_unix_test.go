//go:build unix

package ledger

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestLogOpenedByTwoHardLinksIsOpenedOnce: two agents given one log by
// two names that are no symbolic link (hard links of one file, or one
// file bind-mounted at two names) each took the lock at the name it was
// given (NAME.lock), so both opened it: the second truncated the
// first's reserve of zeros, each claimed messages in its own index, and
// a copy sent to the second ran its handler again (threat: a handler run
// twice for one message id, and two writers appending groups to one
// file). The lock is also taken on the log file itself, and on the new
// file a compaction puts in its place, so whichever opens second is
// refused, ledger_unavailable, in either order, before and after a
// compaction (docs/SPEC-DECISIONS.md AGENT-50).
func TestLogOpenedByTwoHardLinksIsOpenedOnce(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		c := newClock()
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.wal"), filepath.Join(dir, "b.wal")
		openTestWAL(t, a, c, WALOptions{}).Close()
		if err := os.Link(a, b); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
		s := openTestWAL(t, a, c, WALOptions{Slack: 512})
		if compacted {
			// The compaction renames a new file over a.wal, after which
			// b.wal is another file: what is refused is a second agent
			// on the file the first writes, so b.wal is made its name
			// again, as an operator's second name would be.
			for i := 0; i < 40 && s.compactions.Load() == 0; i++ {
				k := Key{Sender: "did:key:zW", ID: id(i)}
				if err := s.MarkRunning(k, c.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
				if err := s.Finish(k, []byte("reply")); err != nil {
					t.Fatal(err)
				}
			}
			if s.compactions.Load() == 0 {
				t.Fatal("no compaction ran")
			}
			if err := os.Remove(b); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(a, b); err != nil {
				t.Fatal(err)
			}
		}
		before, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		second, err := OpenWAL(b, WALOptions{Now: c.Now, LockTimeout: 50 * time.Millisecond})
		if err == nil {
			second.Close()
		}
		if amp.NameOf(err) != ErrLedgerIO {
			t.Errorf("compacted %v: opened by b.wal while open by a.wal: %v, want %s", compacted, err, ErrLedgerIO)
		}
		if after, _ := os.ReadFile(a); string(after) != string(before) {
			t.Errorf("compacted %v: the second open changed the log (%d bytes, was %d)", compacted, len(after), len(before))
		}
		s.Close()
		// Once the first is closed, the second opens (its lock was let go).
		r, err := OpenWAL(b, WALOptions{Now: c.Now})
		if err != nil {
			t.Fatalf("compacted %v: after the first closed, opening by b.wal: %v", compacted, err)
		}
		r.Close()
	}
}
