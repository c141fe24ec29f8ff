package ampstcp

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// TestReplyFrameThatStallsIsCutWithItsConnection: the attack: an agent
// accepts the HANDSHAKE, reads a message and starts a reply frame that
// declares 4 KiB, sends 64 bytes of it, then nothing more (and answers no
// PING: the client sends none). The agent's own server cuts a frame that
// does not keep admission.MinDataRate after admission.FrameGrace; the
// HTTP client cuts a stalled reply body (reply_stalled, TRANSPORT-8: "a
// reply body keeps the data rate"); a TCP client's readLoop that read the
// frame with no deadline and no rate had the request wait for its
// caller's deadline, and so every request after it on that connection
// (one reader: the stall is head-of-line for the whole Transport, which
// keeps the connection usable and picks it for every new message),
// forever with a context without deadline: 5003 at the caller's deadline
// (FrameGrace + 4 s here) for both requests. Now the frame is read under
// the rate (readFrame): the connection is cut within about FrameGrace of
// the stall and its requests fail 2002 reply_stalled (retryable: the
// next attempt dials a new connection).
func TestReplyFrameThatStallsIsCutWithItsConnection(t *testing.T) {
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		if !acceptHandshake(c, br) {
			return
		}
		f, err := ReadFrame(br, 16<<20)
		if err != nil || f.Type != FrameMessage {
			return
		}
		id := topBytes(f.Payload, "id")
		reply, err := amp.Marshal(map[string]any{"id": newID(), "reply_to": id, "body": make([]byte, 4<<10)})
		if err != nil {
			return
		}
		head := binary.BigEndian.AppendUint32(nil, uint32(len(reply)+1))
		head = append(head, FrameMessage)
		c.Write(append(head, reply[:64]...))
		drain(br) // then silence
	})
	tr, err := NewTransport(a.url(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	deadline := admission.FrameGrace + 4*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	first := roundTripAsync(tr, ctx, fakeMessage(t, newID(), nil))
	time.Sleep(200 * time.Millisecond) // the stalled frame has begun
	second := roundTripAsync(tr, ctx, fakeMessage(t, newID(), nil))
	for _, r := range []struct {
		name string
		done <-chan error
	}{{"the request whose reply stalled", first}, {"a request sent after the stall on the same transport", second}} {
		err := waitErr(t, r.done, waitTimeout, r.name)
		took := time.Since(start)
		if !errors.Is(err, ErrReplyStalled) || !errors.Is(err, amp.CodeEndpointUnreachable) || took > deadline-time.Second {
			t.Errorf("%s: %v after %v, want 2002 reply_stalled within about %v of the stall (the caller's deadline was %v)",
				r.name, err, took.Round(100*time.Millisecond), admission.FrameGrace, deadline)
		}
	}
}

// TestSlowAgentIsNotTakenForAStalledFrame: the other side of the rule
// above: an agent may take its time before the first byte of a reply
// frame (an invocation runs that long; the caller's context bounds the
// wait), and a connection waits for replies without a deadline. A bound
// counted from the request, or on the idle connection, would cut a legal
// slow answer; the rate counts from the frame's first byte.
func TestSlowAgentIsNotTakenForAStalledFrame(t *testing.T) {
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		if !acceptHandshake(c, br) {
			return
		}
		f, err := ReadFrame(br, 16<<20)
		if err != nil || f.Type != FrameMessage {
			return
		}
		time.Sleep(admission.FrameGrace + time.Second)
		reply, err := amp.Marshal(map[string]any{"id": newID(), "reply_to": topBytes(f.Payload, "id"), "body": make([]byte, 4<<10)})
		if err != nil {
			return
		}
		c.Write(AppendFrame(nil, FrameMessage, reply))
		drain(br)
	})
	tr, err := NewTransport(a.url(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), admission.FrameGrace+10*time.Second)
	defer cancel()
	if reply, err := tr.RoundTrip(ctx, fakeMessage(t, newID(), nil)); err != nil || reply == nil {
		t.Fatalf("an agent that answered %v after the request: %v, want its reply", admission.FrameGrace+time.Second, err)
	}
}
