package mirror

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// trickle serves bundle files one byte every tick after honest headers (a
// slowloris mirror); everything else is served by h.
type trickle struct {
	h    http.Handler
	tick time.Duration
}

func (tr *trickle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, BundlesPrefix) {
		tr.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	tr.h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	for _, c := range rec.Body.Bytes() {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(tr.tick):
		}
		w.Write([]byte{c})
		w.(http.Flusher).Flush()
	}
}

func TestSyncAbandonsSlowlorisMirrorBody(t *testing.T) {
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	ts := httptest.NewServer(&trickle{h: m, tick: 20 * time.Millisecond})
	defer ts.Close()
	s := agentStore(t)
	before := state(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := Sync(ctx, s, SyncOptions{URL: ts.URL, SpoolDir: filepath.Join(filepath.Dir(s.Path()), "sync"),
		StallTimeout: 300 * time.Millisecond})
	if err != nil || len(rep.Items) != 1 || rep.Items[0].Error != string(ErrIncomplete) {
		t.Fatalf("a trickling mirror held the sync: %+v %v", rep, err)
	}
	if state(t, s) != before {
		t.Fatal("a stalled download changed the store")
	}
}
