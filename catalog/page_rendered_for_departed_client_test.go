package catalog

import (
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// departedTarget is the version page of a hostile schema: 30,000 small
// members (240 KB, accepted by import) rendered to 1 MiB, twice.
const departedTarget = "/ui/version?name=org.hostile.deep&v=1.0.0"

// departedRenderCost writes the parts of raw to a real server of that
// hostile store, a pause of 100 ms between two, closes the connection
// without reading a byte, and returns the bytes the process allocated
// until the handler returned.
func departedRenderCost(t *testing.T, raw ...string) uint64 {
	t.Helper()
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(30000))))
	done := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range raw {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		if _, err := c.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("the handler did not return")
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestPageIsNotRenderedForADepartedClient: CATALOG-23 renders a page
// only for a client still there, learnt from the request's context,
// which net/http cancels from a goroutine of its own a moment after the
// connection closed. Attack: a peer sends GET for the version page of a
// hostile schema and closes the connection at once, again and again.
// The handler's first look at the context comes before that goroutine
// ran, and the printer of the first schema (pretty) did not look again:
// each such request cost one whole printing, about 22 MB allocated and a
// tenth of a second of CPU, for no byte read. The printer should stop
// with the context too (every renderCheck tokens): a few hundred KB,
// bounded here at 8 MiB (a third of one printing: on a loaded machine
// the context may be cancelled some milliseconds late).
func TestPageIsNotRenderedForADepartedClient(t *testing.T) {
	got := departedRenderCost(t, "GET "+departedTarget+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if got > 8<<20 {
		t.Fatalf("a GET whose client closed at once allocated %d MB: its schema was printed for no reader", got>>20)
	}
}

// TestPageRequestWithABodyIsRefused: net/http watches a connection
// for its client's departure only once the request's body was read to
// its end, which no page does. Attack: a peer sends GET for the hostile
// version page declaring a body (Content-Length: 1, or chunked) and
// closes the connection at once: the context was never cancelled, and
// the whole page was rendered (48 MB allocated, a quarter of a second)
// for no byte read, one connection each: the review 71 attack again.
// A GET or HEAD with a body should be refused (400) before any work: a
// few hundred KB at most, bounded here at 8 MiB.
func TestPageRequestWithABodyIsRefused(t *testing.T) {
	for _, head := range []string{"Content-Length: 1", "Transfer-Encoding: chunked"} {
		got := departedRenderCost(t, "GET "+departedTarget+" HTTP/1.1\r\nHost: x\r\n"+head+"\r\n\r\n")
		if got > 8<<20 {
			t.Errorf("a GET with %s, its client gone, allocated %d MB: the page was rendered for no reader", head, got>>20)
		}
	}
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(10))))
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, departedTarget, strings.NewReader("x")))
		if rec.Code != http.StatusBadRequest || rec.Header().Get("Connection") != "close" {
			t.Errorf("%s with a body: status %d, Connection %q; want 400 and close", method, rec.Code, rec.Header().Get("Connection"))
		}
	}
}
