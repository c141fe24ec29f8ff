package catalog

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestPipelinedGetIsNotRenderedForADepartedClient: net/http stops
// watching a connection for its client's departure once it reads the
// first byte of a next request (HTTP/1.1 pipelining), so the request's
// context is never cancelled. Attack (review 79): a peer sends GET for
// the version page of a hostile schema, 100 ms later one byte of a next
// request, and closes the connection: the whole page was rendered (48 MB
// allocated, a quarter of a second of CPU) for no byte read, one
// connection each, on the peer's four page slots. A page now streams
// from its first schema on (CATALOG-26): the write after the close fails
// (the peer's kernel answers a reset), and the printing stops with it.
// Here the handler starts only once the client is gone, so what it costs
// is the rendering for a departed client alone: a chunk or two (about
// 2 MB allocated), bounded at 8 MiB. While the client is still connected
// and reads nothing, the page goes no further than the connection's
// buffers take in (then the rate writer cuts it, CATALOG-24): that part
// is not measured here.
func TestPipelinedGetIsNotRenderedForADepartedClient(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(30000))))
	gone := make(chan struct{})
	done := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gone
		time.Sleep(50 * time.Millisecond) // the reset of the first write is back before the second
		aborted := true
		defer func() { done <- aborted }()
		h.ServeHTTP(w, r)
		aborted = false
	}))
	defer srv.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("GET " + departedTarget + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := c.Write([]byte("G")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	close(gone)
	var aborted bool
	select {
	case aborted = <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("the handler did not return")
	}
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	if got > 8<<20 {
		t.Fatalf("a pipelined GET, its client gone, allocated %d MB: the page was rendered for no reader", got>>20)
	}
	t.Logf("allocated %d KB", got>>10)
	if !aborted {
		t.Fatal("the page of a departed client was not aborted")
	}
}

// TestStreamedPageIsTheRenderedPage: a page with a schema streams from
// the schema on (no Content-Length), a page without one is buffered and
// sent with its Content-Length; the streamed page is the page the
// template renders in one piece (Body outside a handler), byte for byte.
func TestStreamedPageIsTheRenderedPage(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(30000))))
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL + departedTarget)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.ContentLength != -1 || !strings.HasSuffix(strings.TrimSpace(string(body)), "</html>") {
		t.Fatalf("streamed version page: %d, Content-Length %d, %d bytes", res.StatusCode, res.ContentLength, len(body))
	}
	r := httptest.NewRequest(http.MethodGet, departedTarget, nil)
	name, data, _ := route(h.Model(), r, h.admitter("x"))
	var whole strings.Builder
	if err := h.pages[name].ExecuteTemplate(&whole, "layout", data); err != nil {
		t.Fatal(err)
	}
	if whole.String() != string(body) {
		t.Fatalf("the streamed page (%d bytes) is not the page rendered whole (%d bytes)", len(body), whole.Len())
	}
	if n := strings.Count(string(body), `<pre class="schema"`); n != 2 || !strings.Contains(string(body), schemaCut) {
		t.Fatalf("the streamed page shows %d schemas, cut warning %v", n, strings.Contains(string(body), schemaCut))
	}
	res, err = http.Get(srv.URL + Prefix)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.ContentLength <= 0 {
		t.Fatalf("index page: %d, Content-Length %d: want it buffered and sent whole", res.StatusCode, res.ContentLength)
	}
}

// TestStreamedSchemaIsThePrintedSchema: printTo drains, piece by piece,
// the markup prettyFor prints in one piece, for a document too large for
// one drain, one cut at MaxRenderBytes, and texts that are not one JSON
// value (two values, a truncated one), which go as raw text from the
// first piece: nothing drained is taken back.
func TestStreamedSchemaIsThePrintedSchema(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(10))))
	m := h.Model()
	for _, text := range []string{string(manyMembersSchema(3000)), string(manyMembersSchema(30000)), `{"a": 1} 2`, `{"a": [1, 2`, `not json`} {
		s := Schema{Text: []byte(text)}
		toks, err := m.prettyFor(context.Background(), s, "p")
		if err != nil {
			t.Fatal(err)
		}
		wantCut := len(toks) > 0 && toks[len(toks)-1].Cut
		if wantCut {
			toks = toks[:len(toks)-1]
		}
		want, _ := schemaHTML(context.Background(), toks)
		var got strings.Builder
		drains := 0
		cut, err := m.printTo(context.Background(), s, "p", func(toks []Tok) error {
			drains++
			html, err := schemaHTML(context.Background(), toks)
			got.WriteString(string(html))
			return err
		})
		if err != nil || cut != wantCut || got.String() != string(want) {
			t.Errorf("a text of %d bytes: streamed %d bytes in %d drains (cut %v, %v), printed %d (cut %v)",
				len(text), got.Len(), drains, cut, err, len(want), wantCut)
		}
	}
}
