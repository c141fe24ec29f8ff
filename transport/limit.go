package transport

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/admission"
)

// LimitListener wraps a listener so that at most total connections are
// open at once, and at most perPeer of them from one peer (Peer: an IP
// address; an IPv6 peer by its /48, admission.Network, since one host
// with a /48 has 65,536 /64s: docs/SPEC-DECISIONS.md TRANSPORT-14).
// Beyond total, Accept waits until one closes (the kernel's backlog
// queues the rest); a connection from a peer that already has perPeer
// open is closed at once, without a byte written (the listener sits below
// TLS and any protocol), and counted in Refused. So one host cannot take
// every connection a server accepts, whatever it sends on them. total and
// perPeer below 1 are taken as 1; perPeer above total as total.
func LimitListener(l net.Listener, total, perPeer int) *Limited {
	total = max(total, 1)
	perPeer = min(max(perPeer, 1), total)
	return &Limited{Listener: l, sem: make(chan struct{}, total), perPeer: perPeer,
		peers: map[string]int{}, done: make(chan struct{})}
}

// Limited is a listener made by LimitListener.
type Limited struct {
	net.Listener
	sem     chan struct{}
	perPeer int
	refused atomic.Uint64

	mu     sync.Mutex
	peers  map[string]int // open connections by peer (admission.Network)
	open   int
	closed bool
	done   chan struct{}
}

// Accept waits for a free slot, then returns the next connection from a
// peer under its share.
func (l *Limited) Accept() (net.Conn, error) {
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
			return nil, err
		}
		peer := admission.Network(Peer(c.RemoteAddr().String()))
		l.mu.Lock()
		if l.peers[peer] >= l.perPeer {
			l.mu.Unlock()
			l.refused.Add(1)
			<-l.sem
			c.Close()
			continue
		}
		l.peers[peer]++
		l.open++
		l.mu.Unlock()
		return &limitedConn{Conn: c, l: l, peer: peer}, nil
	}
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *Limited) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
	return l.Listener.Close()
}

// Refused is how many connections were closed at once because their peer
// had its share open.
func (l *Limited) Refused() uint64 { return l.refused.Load() }

// WaitClosed waits until every accepted connection is closed, or ctx
// ends (its error then). A server calls it after http.Server.Shutdown,
// which does not track the connections its handlers took over: a refused
// one closing gracefully (CloseAfterAnswer) is closed before the process
// exits, and so not reset.
func (l *Limited) WaitClosed(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for l.Open() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Open is how many accepted connections are open now.
func (l *Limited) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *Limited) release(peer string) {
	l.mu.Lock()
	if l.peers[peer]--; l.peers[peer] <= 0 {
		delete(l.peers, peer)
	}
	l.open--
	l.mu.Unlock()
	<-l.sem
}

// limitedConn gives its slot back when closed (once).
type limitedConn struct {
	net.Conn
	l    *Limited
	peer string
	once sync.Once
}

// CloseWrite shuts the sending side of the connection when it can be
// (TCP), so that an HTTP server can end an answer with a FIN and still
// read what its peer sends (net/http does before closing a connection
// whose request it did not read to the end).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.peer) })
	return err
}
