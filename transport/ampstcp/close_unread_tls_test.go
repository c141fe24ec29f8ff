package ampstcp

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"
)

// pipeListener accepts the server ends of net.Pipe connections: a write
// to one blocks until the peer reads it, as a write to a TCP socket does
// once a peer that reads nothing has let its buffers fill.
type pipeListener struct {
	conns     chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// dial returns the client end of a new connection to l.
func (l *pipeListener) dial(t *testing.T) net.Conn {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
	case <-time.After(waitTimeout):
		t.Fatal("the server accepted no connection")
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// TestPeerThatStopsReadingCannotHoldServerClose: peers on amps:// finish
// the TLS and AMP handshakes, then read nothing more, so that a write to
// their connections blocks (here a pipe; on TCP, once their buffers are
// full). Threat: Close shut each connection with tls.Conn.Close, which
// first writes a close_notify alert under TLS's own 5 s write deadline,
// one connection after another under the server's lock: each such peer
// held Close (and Shutdown once its context ended, every connection's
// exit and the accept loop) 5 s more, a quarter of MaxConns from one
// address minutes. Close now closes the connection below TLS at once.
func TestPeerThatStopsReadingCannotHoldServerClose(t *testing.T) {
	cert, pool := selfSigned(t)
	ln := newPipeListener()
	srv := NewServer(echo(t, 0, nil), ServerOptions{})
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert},
		MinVersion: tls.VersionTLS12, SessionTicketsDisabled: true}))
	t.Cleanup(func() { srv.Close() })

	const peers = 8 // 40 s of close_notify writes, one after another
	for range peers {
		c := tls.Client(ln.dial(t), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		c.SetDeadline(time.Now().Add(waitTimeout))
		r := &rawConn{t: t, c: c, br: bufio.NewReader(c)}
		if !r.handshake(1).Accepted {
			t.Fatal("handshake refused")
		}
		// From here the peer reads nothing.
	}
	eventually(t, "the connections were not all served", func() (bool, string) {
		return connsOf(srv) == peers, ""
	})

	done := make(chan struct{})
	go func() {
		srv.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("Close has not returned after 20 s with %d TLS peers that read nothing: "+
			"it waits for each connection's close_notify write in turn (5 s each)", peers)
	}
}
