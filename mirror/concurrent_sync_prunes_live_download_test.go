package mirror

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// holdMidBody serves every bundle GET of h in two halves: the first half,
// flushed, then (once reached is closed) it waits for release before the
// rest: a download in progress for as long as a test needs.
type holdMidBody struct {
	h                http.Handler
	reached, release chan struct{}
	once             sync.Once
}

func (m *holdMidBody) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, BundlesPrefix) {
		m.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	b := rec.Body.Bytes()
	w.Write(b[:len(b)/2])
	w.(http.Flusher).Flush()
	m.once.Do(func() { close(m.reached) })
	<-m.release
	w.Write(b[len(b)/2:])
}

// TestSyncPrunesAnotherRunsLiveDownload: two `ampbundle sync`
// runs against one store share its spool folder (DB.sync): two mirrors
// synced by two cron jobs, or one cron job whose run outlasts its period,
// through the admin socket of the agent holding the store. A run removes
// every partial file its own mirror does not list (pruneSpool), the live
// one another run is writing included: that run writes the rest of its
// download into a file no longer in the folder, then cannot read it back
// (store_io), and the bundle is not installed; a hostile or merely other
// mirror, synced every minute, keeps a large bundle of an honest one from
// ever completing. Two runs of one mirror also write the same partial file
// at once. Before MIRROR-18 the first run's bundle was refused store_io.
// Should: one
// run at a time uses a spool folder; another is refused at once with a
// retryable store_in_use, removing nothing, and the first imports its
// bundle.
func TestSyncPrunesAnotherRunsLiveDownload(t *testing.T) {
	v1 := testBundle(t, 1)
	m, _ := startMirror(t, newStore(t, v1), nil)
	hold := &holdMidBody{h: m, reached: make(chan struct{}), release: make(chan struct{})}
	slow := httptest.NewServer(hold)
	defer slow.Close()
	_, other := startMirror(t, newStore(t), nil) // lists no bundle
	s := agentStore(t)
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")

	var first *SyncReport
	var firstErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		first, firstErr = Sync(context.Background(), s, SyncOptions{URL: slow.URL, SpoolDir: spool})
	}()
	<-hold.reached
	_, secondErr := Sync(context.Background(), s, SyncOptions{URL: other.URL, SpoolDir: spool})
	close(hold.release)
	<-done
	if firstErr != nil || len(first.Items) != 1 || first.Items[0].Outcome != OutcomeImported {
		t.Fatalf("a sync of another mirror into the same store while this one downloaded: %+v %v (the other run: %v)", first, firstErr, secondErr)
	}
	if !errors.Is(secondErr, resolver.ErrStoreInUse) {
		t.Fatalf("a second sync while one runs: %v, want store_in_use", secondErr)
	}
}
