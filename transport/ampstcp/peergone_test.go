package ampstcp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestResetConnectionEndsTheContextOfItsMessages: a peer pipelines
// messages and resets its connection. Nobody can read their replies any
// more, so the context they are handled in must end at once: the agent
// gives up what has not started (admission.Fair.Enter, a copy waiting
// for its first copy, a ledger claim: each honours ctx and answers 5003
// without running anything), as the HTTP binding does (r.Context() ends
// when the connection goes). Threat: the context ended only after every
// message in flight had returned, so a peer reset and reconnected to have
// its abandoned backlog processed anyway, up to its share each time, with
// nobody reading the replies, and the gone connection kept its peer's
// connection count and in-flight slots meanwhile (Server.Close likewise).
func TestResetConnectionEndsTheContextOfItsMessages(t *testing.T) {
	called := make(chan struct{}, 1)
	ended := make(chan bool, 1)
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		called <- struct{}{}
		select {
		case <-ctx.Done():
			ended <- true
		case <-time.After(4 * time.Second):
			ended <- false
		}
		return nil, ctx.Err()
	})
	_, addr := startServer(t, h, ServerOptions{})
	r := dialRaw(t, addr)
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not called")
	}
	// Reset: the peer is gone, not half-closed.
	if tc, ok := r.c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	r.c.Close()
	if !<-ended {
		t.Fatal("the peer reset its connection, and the context of its message in flight did not end within 4 s: " +
			"the agent keeps waiting for slots and running messages nobody can read the reply of")
	}
}

// TestHalfClosedConnectionStillGetsItsReplies: a peer that shuts its
// sending side after its messages (a client leaving after GOAWAY) still
// reads their replies: EOF is a half-close, not a departure, so the
// context of its messages does not end and they run and are answered
// (the reset of the test above must not be confused with it).
func TestHalfClosedConnectionStillGetsItsReplies(t *testing.T) {
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		<-release
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		id, _, _ := amp.Limits{}.EnvelopeIDs(msg)
		return fakeMessage(t, newID(), id), nil
	})
	_, addr := startServer(t, h, ServerOptions{})
	r := dialRaw(t, addr)
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	id := newID()
	r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, id, nil)))
	tc, ok := r.c.(*net.TCPConn)
	if !ok {
		t.Skip("not a TCP connection")
	}
	if err := tc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the server reads the EOF (nothing to wait on: it must not react)
	close(release)
	f, err := r.frame()
	if err != nil || f.Type != FrameMessage {
		t.Fatalf("after a half-close, the reply: frame type %d, %v; want the AMP message", f.Type, err)
	}
	if _, rt, _ := (amp.Limits{}).EnvelopeIDs(f.Payload); !bytes.Equal(rt, id) {
		t.Fatal("the reply does not answer the request")
	}
}

// TestUnreadReplyFramesAreCutAtTheMinimumDataRate: a peer pipelines
// requests whose replies are large and reads none of them. Threat: each
// reply frame had the whole write timeout (30 s) however little the peer
// read, so the replies' bytes stayed charged to the server's budget
// (and their connection's and peer's) for that long, renewed frame after
// frame. The writer moves the write deadline under the minimum data rate
// (transport.RateWriter, the rule frames are read under): a peer that
// reads nothing is cut off a moment after the grace, and every queued
// reply's charge given back.
func TestUnreadReplyFramesAreCutAtTheMinimumDataRate(t *testing.T) {
	const replyLen = 1<<20 - 256 // within the 1 MiB the raw client accepts
	var handled atomic.Int64
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		handled.Add(1)
		return paddedMessage(t, newID(), nil, replyLen), nil
	})
	opts := ServerOptions{WriteTimeout: time.Hour, frameGrace: 300 * time.Millisecond}
	srv, addr := startServer(t, h, opts)
	r := dialRaw(t, addr)
	if tc, ok := r.c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	const n = 16 // 16 MiB of replies: more than loopback's buffers take
	for range n {
		r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	}
	eventually(t, "the requests were not all handled", func() (bool, string) {
		return handled.Load() == n, fmt.Sprintf("handled %d of %d", handled.Load(), n)
	})
	start := time.Now()
	for srv.InFlightBytes() != 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("a peer that reads none of its replies still has %d bytes charged %v after they were made: "+
				"a reply frame's write is bounded by the write timeout (%v), not the minimum data rate", srv.InFlightBytes(), time.Since(start), opts.WriteTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestResetWhileTheReadLoopWaitsForASlotEndsTheContextOfItsMessages: a
// peer pipelines more messages than it has slots (its connection's, its
// peer share's, the server's) and resets the connection. The mend
// (TRANSPORT-5) notices a reset only in serverConn.Read, but a read loop
// waiting in dispatch for a slot (or in receive for a budget) does not
// read, so the reset goes unseen: the context of the messages already
// handed to the agent does not end, and what waits in the agent for a
// processing slot, a first copy or a ledger claim runs on with nobody to
// read its reply, holding the peer's slots and connection count. That is
// exactly the backlog case the mend was for (a peer within its slots is
// read, and seen). While the read loop waits (dispatch, the budgets'
// acquire), the connection is now watched (serverConn.watch: a
// goroutine reads ahead, a little, and shuts the connection on a reset).
func TestResetWhileTheReadLoopWaitsForASlotEndsTheContextOfItsMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ServerOptions
	}{
		{"connection_slots", ServerOptions{MaxInFlight: 1}},
		{"peer_share", ServerOptions{MaxPeerInFlight: 1}},
		{"server_slots", ServerOptions{MaxInFlightTotal: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called := make(chan struct{}, 2)
			ended := make(chan bool, 2)
			h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
				called <- struct{}{}
				select {
				case <-ctx.Done():
					ended <- true
				case <-time.After(3 * time.Second):
					ended <- false
				}
				return nil, ctx.Err()
			})
			srv, addr := startServer(t, h, tc.opts)
			r := dialRaw(t, addr)
			if !r.handshake(1).Accepted {
				t.Fatal("handshake refused")
			}
			first, second := fakeMessage(t, newID(), nil), fakeMessage(t, newID(), nil)
			r.write(AppendFrame(nil, FrameMessage, first))
			select {
			case <-called:
			case <-time.After(5 * time.Second):
				t.Fatal("the handler was not called")
			}
			// The second is read whole (charged), then waits for a slot.
			r.write(AppendFrame(nil, FrameMessage, second))
			want := int64(len(first) + len(second))
			eventually(t, "the second message was not read", func() (bool, string) {
				return srv.InFlightBytes() == want, fmt.Sprintf("%d bytes in flight, want %d", srv.InFlightBytes(), want)
			})
			if tcp, ok := r.c.(*net.TCPConn); ok {
				tcp.SetLinger(0)
			}
			r.c.Close() // a reset
			if !<-ended {
				t.Fatal("the peer reset its connection while its read loop waited for a slot, and the context of its message " +
					"in flight did not end within 3 s: a reset is seen only when the server reads, and a backlog stops the reading")
			}
		})
	}
}

// TestResetWhileTheReadLoopWaitsForBytesEndsTheContextOfItsMessages: as
// above, the read loop waiting in receive for its connection's byte
// budget (the frame's header read, its payload not) rather than for a
// slot: a reset is seen there too, and the wait given up.
func TestResetWhileTheReadLoopWaitsForBytesEndsTheContextOfItsMessages(t *testing.T) {
	const size = 600 << 10
	called := make(chan struct{}, 2)
	ended := make(chan bool, 2)
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		called <- struct{}{}
		select {
		case <-ctx.Done():
			ended <- true
		case <-time.After(3 * time.Second):
			ended <- false
		}
		return nil, ctx.Err()
	})
	srv, addr := startServer(t, h, ServerOptions{MaxMessageSize: 1 << 20, MaxConnInFlightBytes: 1 << 20})
	r := dialRaw(t, addr)
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	first := paddedMessage(t, newID(), nil, size)
	r.write(AppendFrame(nil, FrameMessage, first))
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not called")
	}
	// The second does not fit the connection's budget while the first
	// holds it: its header is read, and the loop waits.
	r.write(AppendFrame(nil, FrameMessage, paddedMessage(t, newID(), nil, size)))
	time.Sleep(300 * time.Millisecond) // nothing to observe: the loop only waits
	if got := srv.InFlightBytes(); got != int64(len(first)) {
		t.Fatalf("%d bytes in flight, want the first message's %d: the second did not wait", got, len(first))
	}
	if tcp, ok := r.c.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	r.c.Close() // a reset
	if !<-ended {
		t.Fatal("the peer reset its connection while its read loop waited for in-flight bytes, and the context of its " +
			"message in flight did not end within 3 s")
	}
}

// TestHalfCloseWhileTheReadLoopWaitsStillGetsEveryReply: a peer pipelines
// more messages than its connection's slots and shuts its sending side.
// The watch of the waiting read loop reads that EOF, and it must stay a
// half-close: no context ends, the message that waited runs once a slot
// frees, and both replies are written.
func TestHalfCloseWhileTheReadLoopWaitsStillGetsEveryReply(t *testing.T) {
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		<-release
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		id, _, _ := amp.Limits{}.EnvelopeIDs(msg)
		return fakeMessage(t, newID(), id), nil
	})
	srv, addr := startServer(t, h, ServerOptions{MaxInFlight: 1})
	r := dialRaw(t, addr)
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	first, second := fakeMessage(t, newID(), nil), fakeMessage(t, newID(), nil)
	r.write(append(AppendFrame(nil, FrameMessage, first), AppendFrame(nil, FrameMessage, second)...))
	want := int64(len(first) + len(second))
	eventually(t, "the second message was not read", func() (bool, string) {
		return srv.InFlightBytes() == want, fmt.Sprintf("%d bytes in flight, want %d", srv.InFlightBytes(), want)
	})
	tc, ok := r.c.(*net.TCPConn)
	if !ok {
		t.Skip("not a TCP connection")
	}
	if err := tc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	close(release)
	for i := range 2 {
		f, err := r.frame()
		if err != nil || f.Type != FrameMessage {
			t.Fatalf("reply %d after a half-close while the read loop waited: frame type %d, %v; want the AMP message", i+1, f.Type, err)
		}
	}
}
