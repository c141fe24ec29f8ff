//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mirror

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestSpoolLockThatIsNoFileStopsEverySync: MIRROR-21 replaces a
// DB.sync/sync.lock that is not a regular file, but only once it has
// opened it: the open (O_RDWR, O_NOFOLLOW) of a folder fails "is a
// directory", of a link "too many levels of symbolic links", of a
// socket "no such device or address", so the sync failed store_io
// "cannot lock the sync spool folder", with nothing removed, on every
// run for good, revocations included; the message said nothing the
// operator could act on. Whoever may write the spool folder (or an
// operator's slip: mkdir, ln -s) puts one there. Should: a name that
// can be removed without touching anything else (a link, a socket, a
// FIFO, an empty folder) is removed and the lock made, and the sync
// runs; a folder holding files is not removed (it is no sync's, and
// may be someone's data): the sync fails store_io naming the file and
// saying what to do, and nothing inside it is touched.
func TestSpoolLockThatIsNoFileStopsEverySync(t *testing.T) {
	_, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	cases := []struct {
		name  string
		plant func(t *testing.T, lock string)
		runs  bool
	}{
		{"an empty folder", func(t *testing.T, lock string) { mustNil(t, os.Mkdir(lock, 0o700)) }, true},
		{"a link to a file of the sync's user", func(t *testing.T, lock string) {
			target := filepath.Join(t.TempDir(), "precious")
			mustNil(t, os.WriteFile(target, []byte("keep"), 0o600))
			mustNil(t, os.Symlink(target, lock))
			t.Cleanup(func() {
				if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
					t.Errorf("the link's target was touched: %q %v", b, err)
				}
			})
		}, true},
		{"a dangling link", func(t *testing.T, lock string) { mustNil(t, os.Symlink("/nonexistent/x", lock)) }, true},
		{"a socket", func(t *testing.T, lock string) {
			// A socket's path must be short: bind it through its folder.
			t.Chdir(filepath.Dir(lock))
			l, err := net.Listen("unix", filepath.Base(lock))
			mustNil(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		}, true},
		{"a folder holding files", func(t *testing.T, lock string) {
			mustNil(t, os.Mkdir(lock, 0o700))
			mustNil(t, os.WriteFile(filepath.Join(lock, "data"), []byte("keep"), 0o600))
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := agentStore(t)
			spool := filepath.Join(filepath.Dir(s.Path()), "sync")
			mustNil(t, os.Mkdir(spool, 0o700))
			lock := filepath.Join(spool, spoolLockName)
			c.plant(t, lock)
			for run := 1; run <= 2; run++ {
				rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.SpoolDir = spool })
				if c.runs {
					if err != nil || rep == nil {
						t.Fatalf("run %d past a sync.lock that is %s: %v: every later run fails the same way", run, c.name, err)
					}
					continue
				}
				if amp.NameOf(err) != resolver.ErrStoreIO || !strings.Contains(amp.SafeMessage(err), lock) ||
					!strings.Contains(amp.SafeMessage(err), "remove it") {
					t.Fatalf("run %d past a sync.lock that is %s: %q (%v), want %s naming the file and what to do", run, c.name, amp.SafeMessage(err), err, resolver.ErrStoreIO)
				}
				if b, err := os.ReadFile(filepath.Join(lock, "data")); err != nil || string(b) != "keep" {
					t.Fatalf("the folder's file was touched: %q %v", b, err)
				}
			}
		})
	}
}
