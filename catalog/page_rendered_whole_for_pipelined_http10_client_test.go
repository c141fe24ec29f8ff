package catalog

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPipelinedHTTP10PageRenderedWhole: a page to HTTP/1.0 does
// not stream (CATALOG-27: it is buffered and sent with its
// Content-Length), so the failed write that stops the printing for a
// departed HTTP/1.1 client (CATALOG-26) never comes before the page is
// rendered whole. Attack: a peer sends an HTTP/1.0 GET for the version
// page of a hostile schema, then one byte of a next request (net/http
// stops watching the connection, the request's context is never
// cancelled), and closes: the page was rendered whole, two schemas of 1
// MiB of markup each (about 48 MB allocated, a quarter of a second of
// CPU), for no reader, as before CATALOG-26. Now a page that does not
// stream shows at most maxBufferedSchema (128 KiB) of a schema's markup,
// then says where it stops (CATALOG-29): a buffered page costs a bounded
// part of the whole, no more than a streamed page costs a client still
// connected that reads nothing (8 to 24 MB, CATALOG-26). Measured at
// 8.5 MB; bounded here at 12 MiB allocated, a quarter of the whole.
func TestPipelinedHTTP10PageRenderedWhole(t *testing.T) {
	got := departedRenderCost(t, "GET "+departedTarget+" HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", "G")
	t.Logf("allocated %d KB", got>>10)
	if got > 12<<20 {
		t.Fatalf("a pipelined HTTP/1.0 GET, its client gone, allocated %d MB: the page was rendered whole for no reader", got>>20)
	}
}

// TestHTTP10PageShowsItsCutSchemaAsCut: the schema a page to HTTP/1.0
// cuts at maxBufferedSchema is said to be cut, in a page sent whole with
// its Content-Length (CATALOG-27), and the page to HTTP/1.1 is not cut
// there (TestStreamedPageIsTheRenderedPage checks it is the whole
// rendering).
func TestHTTP10PageShowsItsCutSchemaAsCut(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(30000))))
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := sendRaw(t, srv, "GET "+departedTarget+" HTTP/1.0\r\nHost: x\r\n\r\n")
	defer c.Close()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || res.ContentLength != int64(len(body)) {
		t.Fatalf("HTTP/1.0 version page: %d, Content-Length %d, %d bytes read (%v)", res.StatusCode, res.ContentLength, len(body), err)
	}
	if n := strings.Count(string(body), schemaCutBuffered); n != 2 || strings.Contains(string(body), schemaCut) {
		t.Errorf("HTTP/1.0 version page: %d schemas said cut for HTTP/1.0 (want 2), MaxRenderBytes cut shown %v", n, strings.Contains(string(body), schemaCut))
	}
	if len(body) > 2*maxBufferedSchema+512<<10 {
		t.Errorf("HTTP/1.0 version page of %d bytes: the schemas are not cut", len(body))
	}
}
