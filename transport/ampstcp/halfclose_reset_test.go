package ampstcp

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestResetAfterHalfCloseEndsTheContextOfItsMessages: a peer pipelines
// messages, half-closes (shutdown(SHUT_WR): the server's read loop, or
// the watcher of a wait, reads EOF), then resets the connection (close
// with SO_LINGER 0). EOF is rightly not a departure (the peer may still
// read its replies), but a read after it returns EOF again, never the
// reset: were nothing to poll the socket once the read loop has returned
// (serve waits for the messages in flight) or a watcher met EOF, the
// context of its messages would not end, and the agent would run the
// backlog for nobody, holding the peer's connection count and in-flight
// slots while the peer reconnects to queue more (the threat
// TestResetConnectionEndsTheContextOfItsMessages covers for a reset
// without a half-close first). After EOF, while messages are in flight,
// the socket's pending error is polled (pollFailed: a reset in
// CLOSE_WAIT leaves EPIPE there), and the context ends within a poll or
// two: both when the read loop had returned and when it waited for a
// slot.
func TestResetAfterHalfCloseEndsTheContextOfItsMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		// maxInFlight 1 with two messages: the read loop waits for a
		// slot (watched) when the half-close arrives.
		maxInFlight, messages int
	}{
		{"read loop returned", 0, 1},
		{"read loop waiting for a slot", 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, called, ended := contextWatcher(tc.messages, 3*time.Second)
			_, addr := startServer(t, h, ServerOptions{MaxInFlight: tc.maxInFlight})
			r := dialRaw(t, addr)
			if !r.handshake(1).Accepted {
				t.Fatal("handshake refused")
			}
			var frames []byte
			for range tc.messages {
				frames = append(frames, AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil))...)
			}
			r.write(frames)
			select {
			case <-called:
			case <-time.After(5 * time.Second):
				t.Fatal("the handler was not called")
			}
			c, ok := r.c.(*net.TCPConn)
			if !ok {
				t.Skip("not a TCP connection")
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // the server reads the EOF
			c.SetLinger(0)
			c.Close() // RST: the peer is gone
			if !<-ended {
				t.Fatal("the peer half-closed, then reset its connection; the context of its message in flight was still live 3 s later: " +
					"after EOF nothing watches the socket, so the reset is never seen")
			}
		})
	}
}

// contextWatcher returns a handler for up to n messages that reports each
// call on called, then, on ended, whether the message's context ended
// within wait (contextEnds).
func contextWatcher(n int, wait time.Duration) (h Handler, called chan struct{}, ended chan bool) {
	called, ended = make(chan struct{}, n), make(chan bool, n)
	h = HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		called <- struct{}{}
		ended <- contextEnds(ctx, wait)
		return nil, ctx.Err()
	})
	return h, called, ended
}

// contextEnds reports whether ctx ends within wait.
func contextEnds(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}
