package catalog

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// serveAbortable serves r to rec and reports whether the handler
// aborted the answer (http.ErrAbortHandler, as net/http takes it); any
// other panic goes on.
func serveAbortable(h http.Handler, rec http.ResponseWriter, r *http.Request) (aborted bool) {
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); !ok || !errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			aborted = true
		}
	}()
	h.ServeHTTP(rec, r)
	return false
}

// TestAbandonedPageIsNotAnsweredEmpty: a page whose client is gone is
// not rendered (CATALOG-23), and the handler then wrote nothing, which
// net/http sends as a 200 with an empty body, logged and counted as a
// page served. Attack: a client half-closes its connection after its
// request (or the context ends otherwise): it got "200 OK" and no page,
// a success for a page never rendered. The handler should abort the
// answer (http.ErrAbortHandler: the connection is closed, nothing is
// sent), for a small page as for a hostile one.
func TestAbandonedPageIsNotAnsweredEmpty(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(3000))))
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, target := range []string{Prefix, departedTarget, Prefix + "nothing-here"} {
		rec := httptest.NewRecorder()
		if !serveAbortable(h, rec, httptest.NewRequest(http.MethodGet, target, nil).WithContext(gone)) {
			t.Errorf("GET %s of a client gone: answered %d with %d bytes, not aborted", target, rec.Code, rec.Body.Len())
		}
		if rec.Flushed || rec.Body.Len() > 0 {
			t.Errorf("GET %s of a client gone: %d bytes written", target, rec.Body.Len())
		}
	}
}

// TestHalfClosedClientGetsNoEmptyOK is the same on a real connection:
// a client sends GET for a page and half-closes (net/http then cancels
// the request's context; the handler here starts once it did), and
// reads. It got "200 OK" with an empty body; it must read no answer at
// all (the connection closed), never a 200 with nothing.
func TestHalfClosedClientGetsNoEmptyOK(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(10))))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := sendRaw(t, srv, "GET "+departedTarget+" HTTP/1.1\r\nHost: x\r\n\r\n")
	defer c.Close()
	c.(*net.TCPConn).CloseWrite()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("a half-closed client, its page abandoned, got %d and %d bytes", res.StatusCode, len(body))
	}
}
