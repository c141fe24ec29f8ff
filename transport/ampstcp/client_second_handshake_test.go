package ampstcp

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestAgentsSecondHandshakeIsAnsweredByAnErrorFrame: an agent sends a
// second HANDSHAKE on a live connection, a connection error of
// docs/TRANSPORT.md §5. Threat: the client closed the connection without
// the ERROR frame it sends for every other violation, so the agent (or
// its operator reading its log) could not tell a protocol fault from a
// network failure; and, once answered, a connection idle for longer than
// WriteTimeout (the usual pooled connection) lost the frame to the
// deadline its last message had left (a reviewer's case: WriteTimeout
// 100 ms, 500 ms idle). The agent must read an ERROR frame (a connection
// error: no message_id, 1001) before the connection ends, and the call
// on it fails 2002, delivery uncertain (§5: retried with the same id).
func TestAgentsSecondHandshakeIsAnsweredByAnErrorFrame(t *testing.T) {
	for _, tc := range []struct {
		name         string
		writeTimeout time.Duration
		idle         time.Duration
	}{
		{"at once", 0, 0},
		{"after an idle spell past WriteTimeout", 100 * time.Millisecond, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saw := make(chan *ErrorFrame, 1)
			a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
				if !acceptHandshake(c, br) {
					return
				}
				if f, err := ReadFrame(br, 16<<20); err != nil || f.Type != FrameMessage {
					return
				}
				time.Sleep(tc.idle) // the client's last deadline passes
				if _, err := c.Write(AppendFrame(nil, FrameHandshake, EncodeHandshakeResponse(HandshakeResponse{Version: Version, Accepted: true, MaxMsgSize: 16 << 20}))); err != nil {
					return
				}
				var got *ErrorFrame
				for {
					f, err := ReadFrame(br, 16<<20)
					if err != nil {
						break
					}
					if f.Type == FrameError {
						if ef, err := DecodeErrorFrame(f.Payload); err == nil {
							got = &ef
						}
					}
				}
				saw <- got
			})
			tr, err := NewTransport(a.url(), ClientOptions{WriteTimeout: tc.writeTimeout})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			done := roundTripAsync(tr, context.Background(), fakeMessage(t, newID(), nil))
			if err := waitErr(t, done, waitTimeout, "the call on the connection"); !errors.Is(err, amp.CodeEndpointUnreachable) {
				t.Fatalf("call: %v, want 2002", err)
			}
			var ef *ErrorFrame
			select {
			case ef = <-saw:
			case <-time.After(waitTimeout):
				t.Fatal("the agent's reading did not end")
			}
			if ef == nil {
				t.Fatal("the connection ended without an ERROR frame")
			}
			if ef.MessageID != nil || ef.Error.Code != amp.CodeInvalidMessage {
				t.Errorf("ERROR frame %+v, want a connection error (no message_id) of 1001", *ef)
			}
		})
	}
}
