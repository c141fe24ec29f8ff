package amphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReplyIsNeverAskedNorInflatedAsGzip: Go's HTTP client asks for gzip
// by itself (Accept-Encoding: gzip) and inflates the answer before the
// caller sees it, so the reply's bounds (DefaultMaxReply, the minimum
// data rate) counted inflated bytes: an agent could pad its reply with
// empty deflate blocks, any number of wire bytes and inflate CPU for
// nothing counted, as a mirror could to sync (MIRROR-27). The transport
// asks for no encoding, and an answer compressed all the same reaches
// the caller as its raw bytes, which are no AMP message.
func TestReplyIsNeverAskedNorInflatedAsGzip(t *testing.T) {
	var asked atomic.Bool
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte{0xa0})
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			asked.Store(true)
		}
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(z.Bytes())
	}))
	t.Cleanup(srv.Close)
	tr, err := NewTransport(srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	reply, err := tr.RoundTrip(context.Background(), []byte{0xa0})
	if asked.Load() {
		t.Fatal("the transport asked the agent for gzip: its answer would be inflated before any bound counts it")
	}
	if err == nil && bytes.Equal(reply, []byte{0xa0}) {
		t.Fatal("a gzip answer was inflated into the reply")
	}
}
