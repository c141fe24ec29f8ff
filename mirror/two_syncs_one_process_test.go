//go:build unix

package mirror

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestTwoSyncsOfOneSpoolInOneProcessBothTakeAnFcntlLock: where the spool
// lock is an fcntl lock (Solaris, AIX; taken here on purpose), the lock is
// the process's: a second sync of the same spool folder in the same
// process (a program syncing two mirrors into one store at once) was
// granted it, pruned the first one's live partial file, and its close of
// the lock file released the first one's lock as well (MIRROR-23,
// amended, left this open). Two syncs through one Syncer are now kept
// apart within the process before the lock file is opened, by the folder
// the spool's path resolves to: the second is refused store_in_use and
// the first imports its bundle.
func TestTwoSyncsOfOneSpoolInOneProcessBothTakeAnFcntlLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		// second is the second sync's spool path, given the first's.
		second func(t *testing.T, spool string) string
	}{
		{"the same path", func(_ *testing.T, spool string) string { return spool }},
		{"a link to the folder", func(t *testing.T, spool string) string {
			if err := os.MkdirAll(spool, 0o700); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(t.TempDir(), "spool-link")
			if err := os.Symlink(spool, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
			hold := &holdMidBody{h: m, reached: make(chan struct{}), release: make(chan struct{})}
			slow := urlOf(t, hold)
			_, other := startMirror(t, newStore(t), nil) // lists no bundle
			s := agentStore(t)
			spool := filepath.Join(filepath.Dir(s.Path()), "sync")
			second := tc.second(t, spool)
			sy := testSyncer(syncHooks{lockFile: fcntlLock})
			var first *SyncReport
			var firstErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				first, firstErr = sy.Sync(context.Background(), s, SyncOptions{URL: slow, SpoolDir: spool})
			}()
			<-hold.reached
			_, secondErr := sy.Sync(context.Background(), s, SyncOptions{URL: other.URL, SpoolDir: second})
			close(hold.release)
			<-done
			if !errors.Is(secondErr, resolver.ErrStoreInUse) {
				t.Errorf("a second sync of the spool folder in the same process while one runs: %v, want store_in_use", secondErr)
			}
			if firstErr != nil || len(first.Items) != 1 || first.Items[0].Outcome != OutcomeImported {
				t.Fatalf("the first sync, while a second of its spool folder ran in the same process: %+v %v", first, firstErr)
			}
		})
	}
}
