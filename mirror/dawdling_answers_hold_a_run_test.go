package mirror

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// dawdlingMirror serves m, answering each statement file only after
// delay: whole, correct, and within every bound one answer has (the
// header timeout, the stall watchdog, the body's deadline).
type dawdlingMirror struct {
	m       http.Handler
	delay   time.Duration
	fetches atomic.Int32
}

func (d *dawdlingMirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, StatementsPrefix) {
		d.fetches.Add(1)
		select {
		case <-r.Context().Done():
			return
		case <-time.After(d.delay):
		}
	}
	d.m.ServeHTTP(w, r)
}

// TestMirrorWhoseEveryAnswerDawdlesIsCutOffAtTheRunsSlack: each answer
// had 30 s for its headers and StallTimeout (30 s) before its body counts
// at MinDataRate, and nothing bounded what they add up to: a mirror
// answering each of the 10,000 statements and 10,000 bundle heads it may
// list just inside both (files of its own key, refused by the host's
// trust, which does not end a list) held one sync, its spool lock (shared
// by every mirror synced into the store) and the store's write lock for
// some 13 days. The time answers take past their bytes at MinDataRate
// (beyond a round trip each) now comes out of one slack a run; once it is
// spent the answer dawdling is cut off, which ends its list. Scaled down:
// StallTimeout 200 ms (a slack of 800 ms), each statement answered 400 ms
// late: before, all 12 were fetched (4.8 s); now the list ends after a few.
func TestMirrorWhoseEveryAnswerDawdlesIsCutOffAtTheRunsSlack(t *testing.T) {
	const n, delay = 12, 400 * time.Millisecond
	rm := newRepeatMirror(t)
	for _, st := range strangerRevocations(t, n, otherKey) {
		rm.statement(st)
	}
	d := &dawdlingMirror{m: rm, delay: delay}
	ts := httptest.NewServer(d)
	defer ts.Close()
	s := agentStore(t)
	start := time.Now()
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.StallTimeout = 200 * time.Millisecond })
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	notTried := 0
	for _, it := range rep.Statements {
		if it.Error == string(ErrMirrorUnreachable) {
			notTried++
		}
	}
	if got := d.fetches.Load(); got >= n || notTried == 0 {
		t.Fatalf("a mirror answering each of %d statements %v late: %d fetched, %d not tried, the run took %v", n, delay, got, notTried, took)
	}
}
