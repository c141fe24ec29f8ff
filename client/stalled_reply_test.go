package client

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// TestStalledReplyBodyIsCutAtTheMinimumDataRate: the agent sends "200 OK"
// with Content-Length: 1 MiB, one byte, and then nothing more. Read with
// no rate or stall rule, only the caller's context would end it, so a
// library caller whose context has no deadline would be held forever,
// with a buffer of the declared length. The headers of an AMP reply come
// once the agent has the whole reply, so its body arrives under the rule
// the agent applies to requests (admission.MinDataRate after
// admission.FrameGrace, 5 s): a stalled reply fails as a delivery failure
// (reply_stalled) well before a 12 s context ends (TRANSPORT-8).
func TestStalledReplyBodyIsCutAtTheMinimumDataRate(t *testing.T) {
	p := newParties(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", amphttp.ContentType)
		w.Header().Set("Content-Length", "1048576")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte{0xa9})
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	tr, err := amphttp.NewTransport(srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader,
		Retry: Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	start := time.Now()
	err = c.Ping(ctx)
	if took := time.Since(start); err == nil || took > 9*time.Second {
		t.Errorf("a reply body that stalled after its first byte held the caller %v (until its context ended: %v)", took.Round(time.Second), err)
	}
}
