package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// TestRedirectIsNotRetried: the agent answers 302 to everything.
// amphttp.Transport refuses to follow it (redirect_refused, 2002); were
// that retryable, Client.Send would post the same signed message to the
// same answer MaxAttempts times, with backoffs of up to Retry.Max
// (minutes with the library's defaults), for an answer that cannot
// change. A redirect ends the exchange at once: the error is final
// (TRANSPORT-8).
func TestRedirectIsNotRetried(t *testing.T) {
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
	err = p.client(t, tr).Ping(context.Background())
	if amp.NameOf(err) != amphttp.ErrRedirect {
		t.Fatalf("ping through a redirect: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the agent was asked %d times through its redirect, want 1", n)
	}
}
