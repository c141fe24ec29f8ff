package ampstcp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// holdingHandler keeps every message until release is closed and records
// the payload bytes it holds at once (the bytes the server keeps alive for
// messages being handled) and their peak, and the messages in Handle at
// once and their peak: true maxima, updated as they change, not samples.
type holdingHandler struct {
	release     chan struct{}
	held        atomic.Int64
	peak        atomic.Int64
	handled     atomic.Int64
	running     atomic.Int64 // messages in Handle now
	peakRunning atomic.Int64
}

func (h *holdingHandler) Handle(ctx context.Context, msg []byte) ([]byte, error) {
	raise(&h.peakRunning, h.running.Add(1))
	defer h.running.Add(-1)
	raise(&h.peak, h.held.Add(int64(len(msg))))
	<-h.release
	h.held.Add(-int64(len(msg)))
	h.handled.Add(1)
	return nil, nil
}

// raise makes peak at least n.
func raise(peak *atomic.Int64, n int64) {
	for {
		p := peak.Load()
		if n <= p || peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// waitTimeout bounds a wait for a condition: generous, so that a machine
// under heavy load (a load average of 20 on 2 cores, -race) still gets
// there; a server that never gets there fails the test, it is not timed.
const waitTimeout = 2 * time.Minute

// eventually waits until cond holds, failing the test with what (and
// cond's last report) after waitTimeout. cond reports its state.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(waitTimeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not after %v (%s)", what, waitTimeout, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// saturated reports whether srv, serving conns connections whose messages
// h holds, can take in nothing more: every connection's read loop waits in
// a byte budget (its own, its peer's or the server's), and every message
// dispatched is in h.Handle. Nothing is released while h holds its
// messages, so the state then lasts: what the server holds is its peak.
func saturated(srv *Server, h *holdingHandler, conns int) (bool, string) {
	srv.mu.Lock()
	var cs []*serverConn
	for c := range srv.conns {
		cs = append(cs, c)
	}
	var shares []*budget
	for _, p := range srv.peers {
		shares = append(shares, p.bytes)
	}
	srv.mu.Unlock()
	// The server's waiters are counted last: a read loop moves from its
	// connection's or peer's queue to the server's only when granted,
	// which nothing does while h holds the messages, so none is counted
	// twice.
	waiting, dispatched := 0, int64(0)
	for _, c := range cs {
		waiting += queued(c.bytes)
		dispatched += c.inflight.Load()
	}
	for _, b := range shares {
		waiting += queued(b)
	}
	waiting += srv.bytes.waiting()
	running := h.running.Load()
	state := fmt.Sprintf("%d of %d connections, %d read loops waiting for bytes, %d messages dispatched, %d in the handler, %d bytes held",
		len(cs), conns, waiting, dispatched, running, h.held.Load())
	return len(cs) == conns && waiting == conns && dispatched == running, state
}

// queued is how many charges wait in b.
func queued(b *budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// Several peers pipelining large frames must not make the server hold more
// than MaxInFlightBytes before anything is verified (the HTTP binding's
// 64 MiB): counting messages alone let 256 connections x 64 frames of
// 16 MiB pin gigabytes; nor may one peer, however many connections it
// opens, hold more than its share (MaxPeerInFlightBytes). Beyond a cap
// the server stops reading (TCP back-pressure): nothing is refused and
// every message is handled once the held ones finish. Peers are
// distinct loopback addresses (127.0.0.10 and up).
func TestPipelinedLargeFramesCannotPinMoreThanMaxInFlightBytes(t *testing.T) {
	const (
		perConn  = 72
		frameLen = 256 << 10
	)
	for _, c := range []struct {
		name     string
		conns    int
		onePeer  bool // all connections from one address
		opts     ServerOptions
		maxBytes int64
	}{
		// The defaults: the counts alone (64 per connection, 512 in all)
		// would admit 6 x 64 frames = 96 MiB.
		{"defaults", 6, false, ServerOptions{}, DefaultMaxInFlightBytes},
		{"server cap", 6, false, ServerOptions{MaxInFlightBytes: 8 << 20, MaxConnInFlightBytes: 2 << 20, MaxMessageSize: 1 << 20}, 8 << 20},
		// One connection cannot take the whole server budget.
		{"connection cap", 1, false, ServerOptions{MaxConnInFlightBytes: 2 << 20, MaxMessageSize: 1 << 20}, 2 << 20},
		// Nor can one peer with many connections (the default share: a
		// quarter of 64 MiB).
		{"peer cap", 6, true, ServerOptions{}, DefaultMaxInFlightBytes / 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &holdingHandler{release: make(chan struct{})}
			srv, addr := startServer(t, h, c.opts)
			payload := make([]byte, frameLen)
			frame := AppendFrame(nil, FrameMessage, payload)
			var writers sync.WaitGroup
			conns := c.conns
			for i := 0; i < conns; i++ {
				from := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(10+i))}
				if c.onePeer {
					from.IP = net.IPv4(127, 0, 0, 10)
				}
				r := dialRawFrom(t, addr, from)
				r.c.SetDeadline(time.Now().Add(60 * time.Second))
				if !r.handshake(1).Accepted {
					t.Fatal("handshake refused")
				}
				writers.Add(1)
				go func() {
					defer writers.Done()
					for j := 0; j < perConn; j++ {
						if _, err := r.c.Write(frame); err != nil {
							t.Errorf("write %d: %v", j, err)
							return
						}
					}
				}()
			}
			// Saturated: every read loop waits for bytes that only the
			// held messages can give back, so the server holds all it
			// ever will; peak is a true maximum, not a sample.
			eventually(t, "the server never stopped reading", func() (bool, string) { return saturated(srv, h, conns) })
			peak, accounted := h.peak.Load(), srv.InFlightBytes()
			if peak > c.maxBytes || accounted > c.maxBytes {
				t.Fatalf("the server held %d bytes of messages (accounted %d), over the %d-byte cap", peak, accounted, c.maxBytes)
			}
			// The bound was reached, not merely never approached: what is
			// missing is at most a frame per connection still arriving.
			if peak < c.maxBytes-int64(frameLen*conns) {
				t.Fatalf("only %d bytes held of %d offered: the test did not load the server", peak, int64(conns*perConn*frameLen))
			}
			close(h.release)
			writers.Wait()
			eventually(t, "back-pressure lost messages", func() (bool, string) {
				n := h.handled.Load()
				return n == int64(conns*perConn), fmt.Sprintf("handled %d of %d", n, conns*perConn)
			})
			// Nor was the cap passed while the backlog drained.
			if peak := h.peak.Load(); peak > c.maxBytes {
				t.Fatalf("the server held %d bytes of messages while draining, over the %d-byte cap", peak, c.maxBytes)
			}
			eventually(t, "bytes still accounted after every message finished", func() (bool, string) {
				left := srv.InFlightBytes()
				return left == 0, fmt.Sprintf("%d bytes", left)
			})
		})
	}
}

// A stream of small frames must not starve a large one waiting for room
// (first come, first served), and a connection torn down while it waits
// keeps nothing charged.
func TestLargeFrameIsNotStarvedBySmallOnes(t *testing.T) {
	b := newBudget(10)
	never := make(chan struct{})
	if !b.acquire(8, never) {
		t.Fatal("first charge refused")
	}
	large := make(chan bool)
	go func() { large <- b.acquire(5, never) }()
	for queued(b) != 1 {
		time.Sleep(time.Millisecond)
	}
	small := make(chan bool)
	go func() { small <- b.acquire(1, never) }()
	// Queued behind the large one, not admitted: an admitted charge
	// never joins the queue.
	for queued(b) != 2 {
		select {
		case <-small:
			t.Fatal("a small charge overtook the large one waiting before it")
		default:
		}
		time.Sleep(time.Millisecond)
	}
	b.release(8)
	if !<-large || !<-small {
		t.Fatal("waiters not admitted after the release")
	}
	if got := b.inUse(); got != 6 {
		t.Fatalf("in use %d, want 6", got)
	}
	stop := make(chan struct{})
	gaveUp := make(chan bool)
	go func() { gaveUp <- b.acquire(9, stop) }()
	close(stop)
	if <-gaveUp {
		t.Fatal("a torn-down waiter was admitted")
	}
	b.release(6)
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d after every release, want 0", got)
	}
}

// The worker goroutines that handle messages are bounded by the messages in
// flight and leave when the server closes: a server that is closed and
// reopened (a reload, a test suite) does not pile up goroutines.
func TestWorkersLeaveWhenTheServerCloses(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(echo(t, time.Millisecond, nil), ServerOptions{MaxInFlight: 32})
	go srv.Serve(ln)
	tr, err := NewTransport("amp://"+ln.Addr().String(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roundTripAll(t, tr, 500)
	during := runtime.NumGoroutine()
	if during > before+32+16 {
		t.Fatalf("%d goroutines with at most 32 messages in flight (%d before)", during, before)
	}
	tr.Close()
	srv.Close()
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before", n, before)
	}
}

// A peer that sends large requests and never reads the replies must not
// pin the byte budget with the size of those requests: once handled, a
// message is charged its reply's size. Otherwise one such peer (or four,
// with the per-connection default) stalls every other connection until the
// write timeout.
func TestUnreadRepliesDoNotPinTheirRequestsBytes(t *testing.T) {
	const (
		budget   = 8 << 20
		reqLen   = 256 << 10
		replyLen = 16 << 10
	)
	var handled atomic.Int64
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		handled.Add(1)
		id, _, err := amp.Limits{}.EnvelopeIDs(msg)
		if err != nil || len(id) != 16 {
			id = newID() // the attacker's padding: a reply that routes nowhere
		}
		return paddedMessage(t, newID(), id, replyLen), nil
	})
	// The write timeout, and the grace of the minimum data rate its reply
	// frames are written under, are longer than any wait here: a second
	// client stalled behind the attacker gets through only if the server
	// does not let it be stalled, never because the attacker was cut off.
	srv := NewServer(h, ServerOptions{MaxInFlightBytes: budget, MaxConnInFlightBytes: budget, MaxMessageSize: 1 << 20, WriteTimeout: time.Hour,
		frameGrace: time.Hour})
	t.Cleanup(func() { srv.Close() })
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(raw)
	// The attacker's connection is in memory (net.Pipe: a write blocks
	// until the other end reads), handed to the server by a switchListener.
	pl := &switchListener{ch: make(chan net.Conn, 1), closed: make(chan struct{}), addr: raw.Addr()}
	go srv.Serve(pl)

	// The attacker: 64 requests of 256 KiB (twice the budget) on a
	// connection it never reads after the handshake.
	server, peer := net.Pipe()
	t.Cleanup(func() { peer.Close() })
	pl.ch <- server
	r := &rawConn{t: t, c: peer, br: bufio.NewReader(peer)}
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	frame := AppendFrame(nil, FrameMessage, make([]byte, reqLen))
	go func() {
		for i := 0; i < 64; i++ {
			if _, err := peer.Write(frame); err != nil {
				return
			}
		}
	}()
	// Every request is handled (its reply, queued unread, holds the
	// charge): the attacker pins all it can.
	eventually(t, "the attacker's requests were not all handled", func() (bool, string) {
		n := handled.Load()
		return n == 64, fmt.Sprintf("handled %d of 64, server holds %d bytes", n, srv.InFlightBytes())
	})

	// Another client still gets through.
	tr := newTransport(t, raw.Addr().String(), ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	id := newID()
	reply, err := tr.RoundTrip(ctx, paddedMessage(t, id, nil, reqLen))
	if err != nil {
		t.Fatalf("a second client was stalled by a peer that does not read: %v (server holds %d bytes, handled %d)", err, srv.InFlightBytes(), handled.Load())
	}
	if _, rt, _ := (amp.Limits{}).EnvelopeIDs(reply); !bytes.Equal(rt, id) {
		t.Fatal("the reply does not answer the request")
	}
	// What stays charged for the attacker is its unread replies, bounded
	// by its write queue and its messages in flight.
	if held := srv.InFlightBytes(); held > (64+68)*(replyLen+64) {
		t.Fatalf("%d bytes held for unread replies of %d bytes", held, replyLen)
	}
}
