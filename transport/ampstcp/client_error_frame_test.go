package ampstcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// agentSaw is what a hostile agent read from the client after it sent a
// frame of an unknown type: the types of the frames it could parse, the
// ERROR frame among them (nil: none) and how its reading ended.
type agentSaw struct {
	types []byte
	errf  *ErrorFrame
	end   error
}

// stuckWriterAgent accepts the HANDSHAKE and reads nothing more until
// stuck is closed (the client's writer is then blocked inside its
// stream of frames), then sends a frame of unknown type 0x7f. When
// readAfter, it then reads the client's frames until the connection
// ends and reports them on saw; otherwise it reads nothing and keeps
// the connection open until the test ends. Later connections (calls
// that came after the first failed) are read and never answered.
func stuckWriterAgent(t *testing.T, stuck <-chan struct{}, readAfter bool, saw chan<- agentSaw) *hostileAgent {
	quit := make(chan struct{})
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		if !acceptHandshake(c, br) {
			return
		}
		if i > 0 {
			drain(br) // calls that came late: a new connection
			return
		}
		select {
		case <-stuck:
		case <-time.After(waitTimeout):
			return
		}
		if _, err := c.Write(AppendFrame(nil, 0x7f, nil)); err != nil {
			return
		}
		if !readAfter {
			<-quit
			return
		}
		var s agentSaw
		for {
			f, err := ReadFrame(br, 16<<20)
			if err != nil {
				s.end = err
				break
			}
			s.types = append(s.types, f.Type)
			if f.Type == FrameError {
				if ef, err := DecodeErrorFrame(f.Payload); err == nil {
					s.errf = &ef
				}
			}
		}
		saw <- s
	})
	t.Cleanup(func() { close(quit) }) // before the agent's own cleanup
	return a
}

// fillWriter sends n messages of about 8 KiB (8,999-byte bodies: frames
// whose size does not divide the 64 KiB of the writer's buffer) on tr,
// whose agent reads nothing, once the connection's socket buffer is
// small, and returns once every call is on the connection and the
// writer is stuck: its queue is full. The channel reports each call's
// end; each call has wait.
func fillWriter(t *testing.T, tr *Transport, n int, wait time.Duration) <-chan error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	ends := make(chan error, n)
	go func() { _, err := tr.RoundTrip(ctx, paddedMessage(t, newID(), nil, 8999)); ends <- err }()
	var c *clientConn
	eventually(t, "no connection", func() (bool, string) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		c = tr.cur
		return c != nil, ""
	})
	c.conn.(*net.TCPConn).SetWriteBuffer(4 << 10)
	for range n - 1 {
		go func() { _, err := tr.RoundTrip(ctx, paddedMessage(t, newID(), nil, 8999)); ends <- err }()
	}
	eventually(t, "the client's writer did not get stuck", func() (bool, string) {
		c.mu.Lock()
		calls := len(c.pending)
		c.mu.Unlock()
		return calls == n && len(c.out) == cap(c.out),
			fmt.Sprintf("%d of %d calls on the connection, %d of %d frames queued", calls, n, len(c.out), cap(c.out))
	})
	return ends
}

// TestAgentsBadFrameIsAnsweredBetweenTheClientsFrames: an agent lets the
// client's writer fill its socket (it reads nothing: the writer is
// blocked in the middle of its stream of frames, 64 KiB at a time), then
// sends a frame of an unknown type and reads again. Threat: the read
// loop wrote its connection-level ERROR frame (docs/TRANSPORT.md §2)
// on the socket itself, beside the writer, so it landed wherever the
// writer's last 64 KiB ended, inside a message frame: the agent read a
// corrupt stream (a message frame that held the ERROR's bytes, then the
// stream cut inside a frame), never the ERROR. Now the writer writes it,
// after the frame it was writing, and closes: the agent reads whole
// message frames, then the ERROR (no message_id), then the end.
func TestAgentsBadFrameIsAnsweredBetweenTheClientsFrames(t *testing.T) {
	stuck := make(chan struct{})
	saw := make(chan agentSaw, 1)
	a := stuckWriterAgent(t, stuck, true, saw)
	tr, err := NewTransport(a.url(), ClientOptions{WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.lastLinger = waitTimeout // the agent reads at once; a loaded machine may not
	const calls = 400
	ends := fillWriter(t, tr, calls, waitTimeout)
	close(stuck)

	var s agentSaw
	select {
	case s = <-saw:
	case <-time.After(waitTimeout):
		t.Fatalf("the agent's reading has not ended after %v", waitTimeout)
	}
	for i, typ := range s.types {
		if typ != FrameMessage && !(typ == FrameError && i == len(s.types)-1) {
			t.Fatalf("frame %d of %d the agent read is of type 0x%02x: the stream is corrupt", i, len(s.types), typ)
		}
	}
	if s.errf == nil {
		t.Fatalf("the agent read %d frames and no ERROR frame, then %v: the ERROR was written inside a message frame", len(s.types), s.end)
	}
	if s.errf.MessageID != nil || s.errf.Error.Code != amp.CodeInvalidMessage {
		t.Errorf("ERROR frame %+v, want a connection error (no message_id) of 1001", *s.errf)
	}
	if !errors.Is(s.end, io.EOF) {
		t.Errorf("the agent's reading ended with %v after the ERROR, want EOF", s.end)
	}
	for range calls {
		if err := waitErr(t, ends, waitTimeout, "a call on the failed connection"); !errors.Is(err, amp.CodeEndpointUnreachable) {
			t.Fatalf("call: %v, want 2002", err)
		}
	}
}

// TestAgentsBadFrameEndsTheCallsWhenItReadsNothing: an agent lets the
// client's writer fill its socket, then sends a frame of an unknown type
// and reads nothing more. Threat: the read loop wrote its ERROR frame
// on the socket itself under WriteTimeout (30 s by default, an hour
// here) before it failed the connection, so every call on it waited
// that long (or for its own context, 20 s here: 5003, not 2002), and the
// connection stayed open. Now the calls fail at once with 2002 and the
// ERROR frame gets the connection's last transport.AnswerLinger; the
// loops of the connection end.
func TestAgentsBadFrameEndsTheCallsWhenItReadsNothing(t *testing.T) {
	stuck := make(chan struct{})
	a := stuckWriterAgent(t, stuck, false, nil)
	before := runtime.NumGoroutine()
	tr, err := NewTransport(a.url(), ClientOptions{WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 400
	ends := fillWriter(t, tr, calls, 20*time.Second)
	close(stuck)
	for range calls {
		if err := waitErr(t, ends, waitTimeout, "a call on the failed connection"); !errors.Is(err, amp.CodeEndpointUnreachable) {
			t.Fatalf("call: %v, want 2002 at once (5003: it waited for the ERROR frame's write)", err)
		}
	}
	tr.Close()
	// The agent's goroutine holds its end open: one more than before.
	if n := goroutinesBackTo(before + 1); n > before+1 {
		t.Errorf("%d goroutines %v after Close, %d before (and the agent's)", n, waitTimeout, before)
	}
}
