//go:build unix

package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestReadyzFloodDoesNotProbeTheSharedLedgerForEachRequest: /readyz
// answers anyone reaching --listen, and each request probed the etcd
// ledger (one round trip, up to its 2 s deadline, on the cluster every
// node's invocations need): 64 anonymous GETs at once were 64 etcd calls
// in flight. The ledger is probed at most once at a time, and again only
// once the last probe is ledgerProbeEvery old; a request meanwhile takes
// its answer, a failing ledger still makes /readyz 503 (CLI-61).
func TestReadyzFloodDoesNotProbeTheSharedLedgerForEachRequest(t *testing.T) {
	db, _ := serveStore(t)
	store, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var mu sync.Mutex
	now := testNow()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var probes, inFlight, most atomic.Int32
	var down atomic.Bool
	release := make(chan struct{})
	r := &readiness{store: store, now: clock, recheck: time.Hour, ledger: func() error {
		probes.Add(1)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release // a slow etcd
		if down.Load() {
			return errors.New("no quorum")
		}
		return nil
	}}
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ReadyPath, nil))
		return rec.Code, rec.Body.String()
	}
	steps := []struct {
		name       string
		advance    time.Duration
		down       bool
		requests   int
		wantProbes int32
		wantCode   int
	}{
		{"a flood while etcd is slow and down", 0, true, 64, 1, http.StatusServiceUnavailable},
		{"within a second of the last probe", ledgerProbeEvery / 2, false, 8, 1, http.StatusServiceUnavailable},
		{"a second later, etcd back", ledgerProbeEvery, false, 8, 2, http.StatusOK},
		{"the clock stepped back", -time.Hour, true, 8, 3, http.StatusServiceUnavailable},
	}
	for _, st := range steps {
		mu.Lock()
		now = now.Add(st.advance)
		mu.Unlock()
		down.Store(st.down)
		codes := make(chan int, st.requests)
		bodies := make(chan string, st.requests)
		var wg sync.WaitGroup
		for range st.requests {
			wg.Go(func() { c, b := get(); codes <- c; bodies <- b })
		}
		time.Sleep(50 * time.Millisecond) // the requests wait on the slow probe
		close(release)
		wg.Wait()
		release = make(chan struct{})
		close(codes)
		close(bodies)
		for c := range codes {
			b := <-bodies
			if c != st.wantCode || (c == http.StatusServiceUnavailable) != strings.Contains(b, "ledger_unavailable") {
				t.Fatalf("%s: /readyz %d %s, want %d", st.name, c, b, st.wantCode)
			}
		}
		if got := probes.Load(); got != st.wantProbes {
			t.Errorf("%s: %d ledger probes in all after %d requests, want %d", st.name, got, st.requests, st.wantProbes)
		}
	}
	if got := most.Load(); got > 1 {
		t.Errorf("%d ledger probes in flight at once, want 1", got)
	}
}
