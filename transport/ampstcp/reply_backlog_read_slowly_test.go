package ampstcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// sndbufListener sets the send buffer of every connection it accepts,
// so that what the kernel takes off the writer's hands stays small
// against the backlog a test queues.
type sndbufListener struct {
	net.Listener
	size int
}

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(l.size)
	}
	return c, err
}

// startServerSmallSends is startServer whose connections have a send
// buffer of 64 KiB.
func startServerSmallSends(t *testing.T, h Handler, opts ServerOptions) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(h, opts)
	go s.Serve(sndbufListener{Listener: ln, size: 64 << 10})
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String()
}

// TestReplyBacklogReadBelowTheMinimumDataRateIsCut: a peer pipelines
// requests whose replies are 60 KiB frames (a backlog of 3 MiB, all
// charged to its shares and the server's bytes) and reads them at an
// eighth of the minimum data rate, 64 KiB at a time. Threat: the writer
// restarted transport.RateWriter before every frame and every flush, so
// each socket write of up to 64 KiB had a fresh grace (5 s, plus 0.5 s
// at 128 KiB/s by default): a peer taking a step every 5.4 s drained
// the backlog at about 12 KiB/s, a tenth of the documented floor
// (docs/SPEC-DECISIONS.md TRANSPORT-4: "the next 64 KiB step within the
// grace of the last"), and held its replies' charges that long. Here
// (grace 500 ms, rate 8 MiB/s, a step every 62.5 ms) the peer read the
// whole 3 MiB and its connection was never cut. The rate now counts
// across the frames of a backlog, from the first frame the writer took
// while it had nothing to write: the connection is cut a moment after
// the grace, with most of the backlog unread, and its charges given
// back. A peer that reads as fast as it can gets every reply.
func TestReplyBacklogReadBelowTheMinimumDataRateIsCut(t *testing.T) {
	const (
		replyLen = 60 << 10
		n        = 52 // about 3 MiB of replies
		step     = 64 << 10
	)
	for _, tc := range []struct {
		name  string
		pause time.Duration // between steps of 64 KiB
		grace time.Duration // the writer's grace: the honest reader's is long, so a loaded machine's pauses never cut it
		cut   bool
	}{
		{"reads_an_eighth_of_the_rate", 62500 * time.Microsecond, 500 * time.Millisecond, true},
		{"reads_as_fast_as_it_can", 0, 5 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var handled atomic.Int64
			h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
				handled.Add(1)
				return paddedMessage(t, newID(), nil, replyLen), nil
			})
			opts := ServerOptions{MinDataRate: 8 << 20, WriteTimeout: time.Hour, frameGrace: tc.grace}
			srv, addr := startServerSmallSends(t, h, opts)
			r := dialRaw(t, addr)
			if tcp, ok := r.c.(*net.TCPConn); ok {
				tcp.SetReadBuffer(64 << 10)
			}
			if !r.handshake(1).Accepted {
				t.Fatal("handshake refused")
			}
			var want int64
			for range n {
				want += int64(len(AppendFrame(nil, FrameMessage, paddedMessage(t, newID(), nil, replyLen))))
			}
			for range n {
				r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
			}
			eventually(t, "the requests were not all handled", func() (bool, string) {
				return handled.Load() == n, fmt.Sprintf("handled %d of %d", handled.Load(), n)
			})
			r.c.SetReadDeadline(time.Now().Add(time.Minute))
			var got int64
			var err error
			buf := make([]byte, step)
			for got < want {
				var k int
				k, err = io.ReadFull(r.br, buf[:min(int64(step), want-got)])
				got += int64(k)
				if err != nil {
					break
				}
				time.Sleep(tc.pause)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the test's own read deadline passed after %d of %d bytes", got, want)
			}
			cut := got < want
			t.Logf("read %d of %d reply bytes (%v)", got, want, err)
			if cut != tc.cut {
				t.Fatalf("the peer read %d of its %d reply bytes (%v), cut %v, want cut %v: a backlog of replies "+
					"must be taken at MinDataRate (%d B/s) after the grace (%v), counted across its frames",
					got, want, err, cut, tc.cut, opts.MinDataRate, opts.frameGrace)
			}
			eventually(t, "replies still charged", func() (bool, string) {
				return srv.InFlightBytes() == 0, fmt.Sprintf("%d bytes", srv.InFlightBytes())
			})
		})
	}
}

// TestPeerThatPausesBetweenRequestsIsNotChargedForTheWritersIdleTime:
// the other side of the rule above: the rate counts while the writer
// has replies to write, not while it waits for the agent. A peer that
// sends a request, reads its reply at once and waits longer than the
// grace before the next gets every reply: a clock that ran from the
// connection's first frame would find each later reply late at once.
func TestPeerThatPausesBetweenRequestsIsNotChargedForTheWritersIdleTime(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		return paddedMessage(t, newID(), nil, 60<<10), nil
	})
	opts := ServerOptions{MinDataRate: 8 << 20, WriteTimeout: time.Hour, frameGrace: time.Second}
	_, addr := startServerSmallSends(t, h, opts)
	r := dialRaw(t, addr)
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	for i := range 4 {
		r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
		if f, err := r.frame(); err != nil || f.Type != FrameMessage {
			t.Fatalf("reply %d after a pause of %v: type %d, %v, want the reply", i, opts.frameGrace*3/2, f.Type, err)
		}
		time.Sleep(opts.frameGrace * 3 / 2)
	}
}
