package amphttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestRefusalBodyCannotCostTheMessageBound: whoever answers the URL (the
// agent, or anyone on the path of http://) answers every attempt with 503
// and a body of DefaultMaxBody (16 MiB). Read whole under the message
// bound before the status is looked at, a refusal that says only "busy,
// retry" would cost the client 16 MiB of buffer and, sent at the minimum
// data rate, about 130 s per attempt, and 503 is retryable: a quarter of
// an hour for one client.Send with no deadline. A body that is not a
// reply's is read under MaxRefusalBody (an error body is a few hundred
// bytes), the rest dropped unread with the connection (TRANSPORT-8).
func TestRefusalBodyCannotCostTheMessageBound(t *testing.T) {
	var sent atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(DefaultMaxBody))
		w.WriteHeader(http.StatusServiceUnavailable)
		chunk := make([]byte, 64<<10)
		for n := 0; n < DefaultMaxBody; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	}))
	defer srv.Close()
	tr, err := NewTransport(srv.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tr.RoundTrip(ctx, []byte{0xa0}); err == nil {
		t.Fatal("a 503 was taken as a reply")
	}
	tr.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	// Loopback socket buffers hold a few MiB at most; a bounded read
	// leaves most of the 16 MiB unsent.
	if n := sent.Load(); n > DefaultMaxBody/2 {
		t.Errorf("the client read %d bytes of a 503's body: an unsigned busy refusal costs it the whole message bound", n)
	}
}
