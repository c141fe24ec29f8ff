//go:build unix

package admin

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestAdminConnectionFloodIsRefusedBusy: attack: the admin socket
// bounded no connections: a same-user caller (a runaway script) that
// opened connections and kept them (each sending nothing, or a body at
// the minimum data rate) held a descriptor and a goroutine of the agent
// for each, as many as it liked, and with them the descriptors the
// agent's AMP listener needs. Now at most MaxConns are served at once; a
// connection beyond them is answered busy (503, AMP 5004) and closed,
// and once one ends the next is served again.
func TestAdminConnectionFloodIsRefusedBusy(t *testing.T) {
	srv := serveSocket(t)
	c, err := Dial(srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held := make([]net.Conn, 0, MaxConns)
	for range MaxConns {
		conn := holdServedConn(t, srv.Path())
		defer conn.Close()
		held = append(held, conn)
	}
	_, err = c.FetchGeneration()
	if amp.NameOf(err) != "busy" || amp.AsError(err).Code != amp.CodeOverloaded {
		t.Fatalf("a request beyond %d held connections answered %v, not 5004 busy: nothing bounds the admin socket's connections", MaxConns, err)
	}
	held[0].Close()
	// The server sees the close in a moment; 10 s is a hang guard for a
	// loaded machine (a slot never given back stays busy for good).
	var last error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, last = c.FetchGeneration(); last == nil {
			return
		}
	}
	t.Fatalf("a request once a held connection ended still answered %v", last)
}

// holdServedConn opens a connection the server counts as served: one
// whose request was answered 200 and which stays open (keep-alive). A
// connection answered busy (the server had not yet seen an earlier one,
// such as Dial's probe, end) is closed and dialled again: which of the
// caller's connections the server counts is its business, that it holds
// MaxConns of them is the test's.
func holdServedConn(t *testing.T, path string) net.Conn {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		conn, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, "GET /v1/generation HTTP/1.1\r\nHost: admin\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		if err == nil && res.StatusCode == http.StatusOK {
			return conn
		}
		conn.Close()
		if time.Now().After(end) {
			t.Fatalf("no connection was served within 5 s (last: %v)", err)
		}
	}
}

// serveSocket serves the admin socket of a new store as an agent does
// (Serve: its connection bound and timeouts), both closed at the test's
// end.
func serveSocket(t *testing.T) *Server {
	t.Helper()
	s, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv, err := Serve(s, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
