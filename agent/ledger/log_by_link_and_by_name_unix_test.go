//go:build unix

package ledger

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestLogOpenedByItsLinkAndByItsNameIsOpenedOnce: two agents given one
// log, one by a link to it and one by the file's own name, each took
// the lock at the name it was given (FILE.lock), so both ran: each
// claimed a message in its own index, and a copy sent to the second ran
// its handler again (threat: a handler run twice for one message id
// under a deployment that names the log two ways). The agent given the
// link also takes the lock at the name the link leads to, so whichever
// opens second is refused, ledger_unavailable, in either order.
func TestLogOpenedByItsLinkAndByItsNameIsOpenedOnce(t *testing.T) {
	for _, linkFirst := range []bool{true, false} {
		c := newClock()
		real := filepath.Join(t.TempDir(), "real.wal")
		link := filepath.Join(t.TempDir(), "l.wal")
		openTestWAL(t, real, c, WALOptions{}).Close()
		symlink(t, real, link)
		first, second := real, link
		if linkFirst {
			first, second = link, real
		}
		s := openTestWAL(t, first, c, WALOptions{})
		_, err := OpenWAL(second, WALOptions{Now: c.Now, LockTimeout: 50 * time.Millisecond})
		if amp.NameOf(err) != ErrLedgerIO {
			t.Errorf("opened by %s while open by %s: %v, want %s", filepath.Base(second), filepath.Base(first), err, ErrLedgerIO)
		}
		s.Close()
		// Once the first is closed, the second opens (its locks were let go).
		r, err := OpenWAL(second, WALOptions{Now: c.Now})
		if err != nil {
			t.Fatalf("after the first closed, opening by %s: %v", filepath.Base(second), err)
		}
		r.Close()
	}
}
