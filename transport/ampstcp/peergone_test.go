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
