package client

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// TestRetryAfterIsHonouredAndBounded: an agent answers HTTP 503 with
// Retry-After: N, then a signed PONG. A client that dropped the header
// would spend its attempts within its own short backoffs against an agent
// that asked for more (every agent of this repository sends Retry-After
// with its 503). The wait before the next attempt is max(backoff,
// Retry-After), capped at Retry.Max: an agent's Retry-After of 10^9 s
// must not hold the caller longer than Retry.Max (the second case pins
// that bound; TRANSPORT-8).
func TestRetryAfterIsHonouredAndBounded(t *testing.T) {
	for _, c := range []struct {
		header   string
		min, max time.Duration
	}{
		{"3", 3 * time.Second, time.Minute},
		{"1000000000", 0, time.Minute},
	} {
		p := newParties(t)
		pong := p.pongProvider(t)
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			if n.Add(1) == 1 {
				w.Header().Set("Retry-After", c.header)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			out, err := pong.RoundTrip(r.Context(), raw)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", amphttp.ContentType)
			w.Write(out)
		}))
		tr, err := amphttp.NewTransport(srv.URL, 2)
		if err != nil {
			t.Fatal(err)
		}
		var waits []time.Duration
		cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader,
			Retry: Retry{MaxAttempts: 3, Base: 10 * time.Millisecond, Max: time.Minute, Sleep: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(context.Background()); err != nil {
			t.Fatalf("Retry-After %s: %v", c.header, err)
		}
		if len(waits) != 1 || waits[0] < c.min || waits[0] > c.max {
			t.Errorf("Retry-After %s: waited %v before the second attempt, want one wait in [%v, %v]", c.header, waits, c.min, c.max)
		}
		tr.Close()
		srv.Close()
	}
}
