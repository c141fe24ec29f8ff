package catalog

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestStreamedPageToHTTP10ClientIsUnframed: a schema page
// streams from its first schema without Content-Length (CATALOG-26),
// which CATALOG-26 says a client cannot take, cut, for a whole page
// because the terminating chunk is missing. An HTTP/1.0 request cannot
// be answered chunked: net/http ends the body by closing the
// connection, so a page cut off after its first byte (a template
// failure, the rate writer, an abort) reads to that client, or to an
// HTTP/1.0 proxy in front of it, as a whole page: a schema shown cut
// with no "the rendering stops here". The answer to an HTTP/1.0 GET of a
// schema page had no Content-Length and was delimited by the close. Now
// a page to HTTP/1.0 does not stream (pageOut.streams): it is buffered
// and sent with its Content-Length, the render budget bounding its
// rendering (CATALOG-27).
func TestStreamedPageToHTTP10ClientIsUnframed(t *testing.T) {
	h, err := NewHandler(Options{Open: opener(newStore(t, deepBundle(t, manyMembersSchema(3000)))), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := sendRaw(t, srv, "GET "+departedTarget+" HTTP/1.0\r\nHost: x\r\n\r\n")
	defer c.Close()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if res.ContentLength < 0 {
		t.Errorf("HTTP/1.0 answer of a schema page is delimited by the connection's close (no Content-Length): a cut page reads as whole")
	}
}

// sendRaw writes request, as it is, on a new connection to srv, whose
// reads and writes fail after 10 s.
func sendRaw(t *testing.T, srv *httptest.Server, request string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c
}
