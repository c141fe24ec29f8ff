package ampstcp

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestSlowFramesFromOtherPeersCannotHoldTheServerBudget: four hosts
// (127.0.0.2 to .5) each declare a 16 MiB frame and send only part of
// it; the server's budget is charged what they sent (plus at most one
// chunk each), their declared sizes only their own shares, and a small
// frame from a fifth host is answered meanwhile (threat: a frame charged
// its declared size when its header came let four slow hosts keep the
// whole 64 MiB budget full, and a valid caller kept 0 % of its
// throughput). The minimum data rate is kept out of it (a minute of
// grace): nothing here depends on time.
func TestSlowFramesFromOtherPeersCannotHoldTheServerBudget(t *testing.T) {
	opts := ServerOptions{FrameTimeout: 2 * time.Minute, frameGrace: time.Minute}
	srv, addr := startServer(t, echo(t, 0, nil), opts)
	const declared, sent = 16 << 20, 100 << 10
	for h := 2; h <= 5; h++ {
		r := dialRawFrom(t, addr, &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(h))})
		r.c.SetDeadline(time.Now().Add(waitTimeout))
		r.handshake(1)
		r.write(append(binary.BigEndian.AppendUint32(nil, declared+1), FrameMessage))
		r.write(make([]byte, sent))
	}
	// Each peer's share holds its declared frame; the server holds, of
	// each, what arrived, which the read loop charged before reading it.
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(5 * time.Millisecond) {
		ready := srv.InFlightBytes() >= 4*sent
		for h := 2; h <= 5; h++ {
			ready = ready && srv.peerInFlightBytes(fmt.Sprintf("127.0.0.%d", h)) == declared
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the four frames were not read: the server holds %d bytes", srv.InFlightBytes())
		}
	}
	if held, most := srv.InFlightBytes(), int64(4*(sent+readChunk)); held > most {
		t.Fatalf("four slow frames that sent %d bytes each hold %d bytes of the server's budget, over %d (what they sent plus a chunk each)", sent, held, most)
	}
	r := dialRawFrom(t, addr, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	r.c.SetDeadline(time.Now().Add(waitTimeout))
	r.handshake(1)
	r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	if f, err := r.frame(); err != nil || f.Type != FrameMessage {
		t.Fatalf("a small frame from another host was not answered while the slow frames arrive: %v %v (server holds %d bytes)", f.Type, err, srv.InFlightBytes())
	}
}

// closedStop is a stop channel already closed: a budget call given it
// returns false at once instead of waiting, so a test sees, without any
// timing, whether a charge would have had to wait.
func closedStop() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// TestSmallFrameNeverQueuesBehindAPartialLargeFrame: while large frames
// still arriving fill what they may take of the server's budget and one
// of them waits to grow, small frames are charged at once, up to the
// whole cap (threat: in one first-come-first-served queue, a caller's
// small frames waited behind the next large frame of a slow peer).
func TestSmallFrameNeverQueuesBehindAPartialLargeFrame(t *testing.T) {
	const limit, msg = 2 << 20, 512 << 10
	b := newServerBudget(limit, msg)
	oldest, p, q := b.begin(), b.begin(), b.begin()
	for b.grow(p, readChunk, closedStop()) && b.grow(q, readChunk, closedStop()) {
	}
	if b.partial != b.largeCap {
		t.Fatalf("partial frames hold %d, want their cap %d", b.partial, b.largeCap)
	}
	// q waits to grow, for real.
	stop := make(chan struct{})
	grown := make(chan bool, 1)
	go func() { grown <- b.grow(q, readChunk, stop) }()
	for b.waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	var small int64
	for b.inUse()+readChunk <= limit {
		if !b.acquireSmall(readChunk, closedStop()) {
			t.Fatalf("a small frame had to wait behind a partial large frame, with %d of %d bytes charged", b.inUse(), int64(limit))
		}
		small += readChunk
	}
	if small < limit-b.largeCap-readChunk {
		t.Fatalf("small frames got %d bytes", small)
	}
	close(stop)
	if <-grown {
		t.Fatal("the partial frame grew past its cap")
	}
	for _, f := range []*partialFrame{oldest, p, q} {
		b.abort(f)
	}
	b.release(small)
	if b.inUse() != 0 || b.partial != 0 {
		t.Fatalf("left %d charged (%d partial)", b.inUse(), b.partial)
	}
}

// TestPartialLargeFramesCannotDeadlock: large frames charged as they
// arrive fill the room partial frames may take before any of them is
// whole; the oldest still grows to its end, and once handled the next
// oldest does, until every frame is whole (threat: frames each holding
// part of the budget and each waiting for more would wait for ever, and
// the server would stop reading every connection). Each grow is given a
// closed stop: one that would have to wait fails at once.
func TestPartialLargeFramesCannotDeadlock(t *testing.T) {
	const limit, msg = 2 << 20, 512 << 10
	b := newServerBudget(limit, msg)
	frames := make([]*partialFrame, 5)
	for i := range frames {
		frames[i] = b.begin()
	}
	// All but the oldest grow in turn while they can.
	for grew := true; grew; {
		grew = false
		for _, f := range frames[1:] {
			if f.held < msg && b.grow(f, readChunk, closedStop()) {
				grew = true
			}
		}
	}
	for i, f := range frames[1:] {
		if f.held >= msg {
			t.Fatalf("frame %d is whole already (%d bytes): the test does not fill the budget", i+1, f.held)
		}
	}
	for i, f := range frames {
		for f.held < msg {
			if !b.grow(f, readChunk, closedStop()) {
				t.Fatalf("frame %d, the oldest, cannot grow past %d bytes with %d of %d charged: the partial frames deadlock", i, f.held, b.inUse(), int64(limit))
			}
		}
		b.done(f)
		b.release(msg) // handled
	}
	if b.inUse() != 0 || b.partial != 0 {
		t.Fatalf("left %d charged (%d partial)", b.inUse(), b.partial)
	}
}

// acquireSmall charges a small frame of n bytes, waiting while it does
// not fit; false (nothing charged) when stop closes first.
func (b *serverBudget) acquireSmall(n int64, stop <-chan struct{}) bool {
	return b.acquire(n, stop)
}

// grow charges n more bytes to p, before they are read, waiting while
// they do not fit; false when stop closes first (what p holds is then
// given back by abort).
func (b *serverBudget) grow(p *partialFrame, n int64, stop <-chan struct{}) bool {
	return b.growBy(p, n, stop, nil)
}

// waiting is how many frames wait, small and partial (tests).
func (b *serverBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters) + len(b.large)
}

// peerInFlightBytes is what the peer key holds of its own share: the
// declared sizes of its frames (tests).
func (s *Server) peerInFlightBytes(key string) int64 {
	s.mu.Lock()
	p := s.peers[key]
	s.mu.Unlock()
	if p == nil {
		return 0
	}
	return p.bytes.inUse()
}

// acquire charges n, waiting while it does not fit. It gives up (false,
// nothing charged) when stop is closed first.
func (b *budget) acquire(n int64, stop <-chan struct{}) bool {
	return b.acquireBy(n, stop, nil)
}
