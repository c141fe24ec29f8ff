//go:build unix

package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/resolver"
)

// holdLive opens the store at p as a running agent does (exclusive lock)
// and serves its admin socket; it returns the store and an opener that
// reaches it through the socket, as 'ampbundle serve' does while the agent
// holds the store.
func holdLive(t *testing.T, p string) (*resolver.Store, func() (Source, error)) {
	t.Helper()
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := admin.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: admin.NewHandler(s, nil), ConnContext: admin.ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s, func() (Source, error) { return admin.Dial(sock) }
}

func servedIndex(t *testing.T, url string) Index {
	t.Helper()
	_, body := get(t, http.MethodGet, url+IndexPath, nil)
	var ix Index
	if err := json.Unmarshal(body, &ix); err != nil {
		t.Fatalf("index: %v: %s", err, body)
	}
	return ix
}

// TestMirrorOverLiveStoreSeesEveryCommitAtTheNextRefresh: a mirror that
// reads a store through the admin socket of the agent holding it served
// generation 0 and never saw the agent's commits (the socket client knew
// the generation only from its last answer, and a fresh client had none),
// so it kept serving what it read first. Now one refresh after each commit
// serves it, labelled with the store's true generation; a refresh with no
// commit between takes no new snapshot.
func TestMirrorOverLiveStoreSeesEveryCommitAtTheNextRefresh(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	store, open := holdLive(t, p)
	m, ts := startMirror(t, p, func(o *Options) { o.Open = open })
	if m.Generation() != store.Generation() || m.Generation() == 0 {
		t.Fatalf("first snapshot at generation %d, the store is at %d", m.Generation(), store.Generation())
	}
	for v := uint64(2); v <= 3; v++ {
		if _, err := store.Import(context.Background(), bytes.NewReader(testBundle(t, v)), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := m.Refresh(); err != nil {
			t.Fatal(err)
		}
		ix := servedIndex(t, ts.URL)
		if ix.Generation != store.Generation() || len(ix.Bundles) != 1 || ix.Bundles[0].Version != v {
			t.Fatalf("after the agent imported version %d (store generation %d): index generation %d, bundles %+v",
				v, store.Generation(), ix.Generation, ix.Bundles)
		}
		if m.Capabilities().Generation != store.Generation() {
			t.Fatalf("capabilities document at generation %d, store at %d", m.Capabilities().Generation, store.Generation())
		}
	}
	before := m.cur.Load()
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	if m.cur.Load() != before {
		t.Fatal("a refresh without a commit took a new snapshot")
	}
}
