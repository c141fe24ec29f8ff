package ampstcp

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestResetWhileTheLookaheadIsFullEndsTheContextOfItsMessages: a peer
// pipelines more small messages than the read loop's bufio buffer
// (64 KiB) and the watcher's lookahead (4 KiB) hold, on a connection
// with one slot. The first wait for a slot starts a watcher, which fills
// the lookahead and polls the socket's pending error; when the slot
// frees it is unwatched. The next message comes from the bufio buffer,
// not from Read, so the lookahead is still full when it waits in turn.
// The peer now resets. Were a full lookahead to start no watch, nothing
// would see the reset, and the whole buffered backlog (hundreds of
// messages) would run, one slot at a time, for nobody. A watch with a
// full lookahead polls (pollFailed), so the context of the message in
// flight ends within a poll or two.
func TestResetWhileTheLookaheadIsFullEndsTheContextOfItsMessages(t *testing.T) {
	var calls atomic.Int64
	second := make(chan bool, 1)
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		switch calls.Add(1) {
		case 1:
			time.Sleep(300 * time.Millisecond) // the watcher fills the lookahead meanwhile
			return nil, nil
		case 2:
			second <- contextEnds(ctx, 3*time.Second)
			return nil, ctx.Err()
		}
		return nil, ctx.Err()
	})
	_, addr := startServer(t, h, ServerOptions{MaxInFlight: 1})
	r := dialRaw(t, addr)
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	var frames []byte
	for range 200 {
		frames = append(frames, AppendFrame(nil, FrameMessage, paddedMessage(t, newID(), nil, 1000))...)
	}
	r.write(frames) // ~200 KiB: the bufio buffer, the lookahead, and more in the socket
	eventually(t, "the second message's handler did not run", func() (bool, string) {
		return calls.Load() >= 2, fmt.Sprintf("%d calls", calls.Load())
	})
	time.Sleep(200 * time.Millisecond) // the third message now waits for the slot
	if c, ok := r.c.(*net.TCPConn); ok {
		c.SetLinger(0)
	}
	r.c.Close() // RST
	if !<-second {
		t.Fatal("the peer reset its connection while the read loop waited for a slot with its lookahead full; " +
			"the context of its message in flight was still live 3 s later: watch starts no poll when the lookahead is full")
	}
}
