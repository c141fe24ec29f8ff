//go:build unix

package admin

import (
	"net"
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
	var held []net.Conn
	for range MaxConns {
		conn, err := net.Dial("unix", srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		held = append(held, conn)
	}
	time.Sleep(100 * time.Millisecond) // every held connection is accepted
	_, err = c.FetchGeneration()
	if amp.NameOf(err) != "busy" || amp.AsError(err).Code != amp.CodeOverloaded {
		t.Fatalf("a request beyond %d held connections answered %v, not 5004 busy: nothing bounds the admin socket's connections", MaxConns, err)
	}
	held[0].Close()
	var last error
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, last = c.FetchGeneration(); last == nil {
			return
		}
	}
	t.Fatalf("a request once a held connection ended still answered %v", last)
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
