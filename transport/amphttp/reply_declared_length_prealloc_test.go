package amphttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestReplyDeclaredLengthAllocatesBeforeBytes: a hostile agent (or
// whatever answers at the URL) answers 200 with a Content-Length of
// 16 MiB, sends 16 bytes and closes. The client must not size its buffer
// by the declared length (it did: about a hundred bytes of headers made
// it allocate 16 MiB per call, held until the body stalled, so a client
// calling many agents at once could be made to allocate 16 MiB per
// call): the buffer grows with the bytes that arrive, as the TCP
// binding's frames do (ampstcp.ReadFrame), the declared length only
// bounding that growth.
func TestReplyDeclaredLengthAllocatesBeforeBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/cbor\r\nContent-Length: 16777216\r\n\r\n0123456789abcdef")
		bw.Flush()
	}))
	defer srv.Close()
	tr, err := NewTransport(srv.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const calls = 4
	got := testalloc.Least(func() {
		for range calls {
			if _, err := tr.RoundTrip(ctx, []byte{0xa0}); err == nil {
				t.Fatal("a reply cut short of its declared length was taken")
			}
		}
	})
	// 16 bytes arrived per call: allow 1 MiB per call for the client's
	// own buffers (bufio, headers, TLS-free dial), far below 16 MiB.
	if got > calls<<20 {
		t.Fatalf("%d replies of 16 bytes declared 16 MiB cost the client %d MiB of allocations; want the buffer to grow with the bytes that arrive", calls, got>>20)
	}
}
