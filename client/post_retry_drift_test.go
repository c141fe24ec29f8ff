package client

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// streamStartBody is a STREAM_START body for Post (the server under test
// never reads it).
func streamStartBody(t *testing.T) []byte {
	t.Helper()
	b, err := amp.Marshal(amp.StreamStartBody{StreamID: "00112233445566778899aabbccddeeff", ContentType: "application/octet-stream",
		Filename: "content", TotalSize: 1, TotalChunks: 1, ChunkSize: DefaultChunkSize, HashAlgo: "sha256"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPostDoesNotRetryARefusalSendTreatsAsFinal: the attack: an
// agent (or anyone on the path of a loopback http://) answers every
// message with a 302. amphttp refuses to follow it with redirect_refused,
// 2002, Final (TRANSPORT-8: "the same message to the same URL gets the
// same answer"). Client.Send honours Final (TestRedirectIsNotRetried);
// a Client.Post (STREAM_START, STREAM_DATA, reports; every chunk of
// SendStream and InvokeLarge) that checked only Code.Retryable() posted
// the same signed message MaxAttempts times, sleeping backoffs of up to
// Retry.Max (a minute with the library's defaults) in between. One post,
// redirect_refused at once, as Send: both decide by one rule (resend,
// redeliverable).
func TestPostDoesNotRetryARefusalSendTreatsAsFinal(t *testing.T) {
	p := newParties(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	tr, err := amphttp.NewTransport(srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader,
		Retry: Retry{MaxAttempts: 5, Base: time.Millisecond, Max: time.Millisecond,
			Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Post(context.Background(), amp.TypeStreamStart, streamStartBody(t))
	if amp.NameOf(err) != amphttp.ErrRedirect {
		t.Fatalf("post through a redirect: %v, want redirect_refused", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the agent was sent the same STREAM_START %d times through its redirect, want 1 (the refusal is final)", n)
	}
}

// TestPostWaitsTheAgentsRetryAfter: the attack runs the other
// way: a busy agent answers 503 with Retry-After: 30 (as every agent of
// this repository does), then takes the message (202). Client.Send waits
// max(backoff, Retry-After) capped at Retry.Max (TRANSPORT-8,
// TestRetryAfterIsHonouredAndBounded); a Client.Post that waited its bare
// backoff (c.backoff, not c.wait) had a stream's every chunk hammer an agent
// that asked for 30 s within Base. The wait before the second post is at
// least 30 s (within Retry.Max, here a minute), as Send's: both wait by
// one rule (resend, wait).
func TestPostWaitsTheAgentsRetryAfter(t *testing.T) {
	p := newParties(t)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	tr, err := amphttp.NewTransport(srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var waits []time.Duration
	cl, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader,
		Retry: Retry{MaxAttempts: 3, Base: 10 * time.Millisecond, Max: time.Minute, Sleep: func(_ context.Context, d time.Duration) error {
			waits = append(waits, d)
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Post(context.Background(), amp.TypeStreamStart, streamStartBody(t)); err != nil {
		t.Fatalf("post after one 503: %v", err)
	}
	if len(waits) != 1 || waits[0] < 30*time.Second || waits[0] > time.Minute {
		t.Errorf("waited %v before posting again to an agent that asked for Retry-After: 30, want one wait in [30s, 1m]", waits)
	}
}
