package mirror

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSyncCutShortForgetsTheHeadsItRefused: a mirror lists bundle files no
// trusted key signs before the rest, and the sync runs under a deadline
// (ampbundle sync --timeout) that the mirror makes it reach (here: at the
// third file). The heads of the first two were refused and noted, but the
// notes were saved only by a run that reached its end: every run cut
// short judged the same heads again, and never reached the files listed
// after the ones its deadline allowed. The notes are now saved however
// the run ends (docs/SPEC-DECISIONS.md MIRROR-23, amended by review 116).
func TestSyncCutShortForgetsTheHeadsItRefused(t *testing.T) {
	own := ownKey(125)
	var files [][]byte
	for i := range 3 {
		files = append(files, paddedBundle(t, fmt.Sprintf("org.example.own%d", i), own, 1<<10))
	}
	m := stationOf(t, []ed25519.PrivateKey{own}, files...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cutting atomic.Bool
	cutting.Store(true)
	var early atomic.Int32 // requests for the first two files
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case !strings.HasPrefix(p, BundlesPrefix):
		case strings.Contains(p, "own2") && cutting.Load():
			cancel() // the run's deadline passes while this file is fetched
			<-r.Context().Done()
			return
		case !strings.Contains(p, "own2"):
			early.Add(1)
		}
		m.ServeHTTP(w, r)
	}))
	defer ts.Close()
	s := agentStore(t)
	opts := SyncOptions{URL: ts.URL, SpoolDir: filepath.Join(filepath.Dir(s.Path()), "sync")}
	if _, err := Sync(ctx, s, opts); err == nil {
		t.Fatal("run 1 ended at its deadline without an error")
	}
	if early.Load() == 0 {
		t.Fatal("run 1 fetched neither of the first two files: the mirror's order is not the one this test needs")
	}
	cutting.Store(false)
	early.Store(0)
	rep, err := Sync(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := early.Load(); n != 0 {
		t.Fatalf("run 2 fetched the heads run 1 refused again (%d requests): run 1's notes were lost when its deadline cut it short", n)
	}
	for _, it := range rep.Items {
		if it.Error != string(bundle.ErrUntrustedKey) {
			t.Fatalf("run 2: %+v; want each refused %s", it, bundle.ErrUntrustedKey)
		}
	}
}
