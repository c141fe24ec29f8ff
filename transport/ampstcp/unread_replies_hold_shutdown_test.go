package ampstcp

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// blockedSender reports whether a connection of srv has its write queue
// full and a handler waiting to queue one more reply (its writer is held
// by a peer that reads nothing).
func blockedSender(srv *Server) (bool, string) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for c := range srv.conns {
		if len(c.out) == cap(c.out) && c.inflight.Load() > 0 {
			return true, ""
		}
		return false, fmt.Sprintf("%d of %d frames queued, %d in flight", len(c.out), cap(c.out), c.inflight.Load())
	}
	return false, "no connection"
}

// TestPeerThatNeverReadsRepliesCannotHoldShutdown: a peer pipelines
// requests and reads none of the replies, so the connection's writer
// blocks on the socket and its write queue fills, handlers waiting to
// queue more behind it. Threat: Shutdown queued the connection's GOAWAY
// with the same blocking send, under the server's lock, before it looked
// at its context; so Shutdown(ctx) returned only once that peer had let
// every reply queued ahead of the GOAWAY through (each frame up to the
// write timeout at the minimum rate: minutes for a peer that trickles),
// and Close, every connection's exit and the accept loop waited on the
// same lock meanwhile. The GOAWAY is now handed to the writer without
// waiting: Shutdown returns when its context ends, and closes what is
// left.
func TestPeerThatNeverReadsRepliesCannotHoldShutdown(t *testing.T) {
	const replyLen = 256 << 10 // within the 1 MiB the raw client accepts
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		id, _, err := amp.Limits{}.EnvelopeIDs(msg)
		if err != nil {
			return nil, err
		}
		return paddedMessage(t, newID(), id, replyLen), nil
	})
	// The writer waits as long as the peer is within the write timeout:
	// a peer at the edge of the minimum rate, without the test's minutes.
	opts := ServerOptions{MaxInFlight: 1, WriteTimeout: 2 * time.Minute, frameGrace: 2 * time.Minute}
	srv, addr := startServer(t, h, opts)
	r := dialRaw(t, addr)
	if tc, ok := r.c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	for range 64 { // 16 MiB of replies: more than loopback's buffers take
		r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	}
	eventually(t, "the connection's write queue did not fill", func() (bool, string) { return blockedSender(srv) })

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Shutdown reported every connection drained while the peer still had unread replies")
		}
	case <-time.After(45 * time.Second):
		t.Fatal("Shutdown with a 100 ms context has not returned after 45 s: " +
			"a peer that reads no replies holds the GOAWAY, and the server's lock, behind its full write queue")
	}
}
