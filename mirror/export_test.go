package mirror

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// testSyncer is a Syncer whose syncs run with hooks: what only tests
// change in a sync (syncHooks).
func testSyncer(hooks syncHooks) *Syncer { return &Syncer{hooks: hooks} }

// syncWithHooks syncs s from url once, as syncOnce does, with hooks.
func syncWithHooks(t *testing.T, s *resolver.Store, url string, hooks syncHooks, mod func(*SyncOptions)) (*SyncReport, error) {
	t.Helper()
	opts := SyncOptions{URL: url, SpoolDir: filepath.Join(filepath.Dir(s.Path()), "sync")}
	if mod != nil {
		mod(&opts)
	}
	return testSyncer(hooks).Sync(context.Background(), s, opts)
}
