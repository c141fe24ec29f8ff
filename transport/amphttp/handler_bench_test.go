package amphttp

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHandlerPost measures what the binding itself costs one POST
// (headers, admission, reading and charging the body, writing the reply)
// around a handler that answers at once: its allocs/op is the figure
// that a change of NewHandler keeps equal (the agent's own cost is
// measured by agent's BenchmarkHTTPInvoke).
func BenchmarkHandlerPost(b *testing.B) {
	reply := []byte{0xa1, 0x61, 0x61, 0x01}
	h := NewHandler(handlerFunc(func(_ context.Context, msg []byte) ([]byte, error) {
		if len(msg) == 0 {
			b.Fatal("empty body reached the handler")
		}
		return reply, nil
	}), Options{})
	body := bytes.Repeat([]byte{0x01}, 1024)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, MessagesPath, bytes.NewReader(body))
		r.Header.Set("Content-Type", ContentType)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), reply) {
			b.Fatalf("status %d, body %x", w.Code, w.Body.Bytes())
		}
	}
}
