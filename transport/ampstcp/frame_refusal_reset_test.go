package ampstcp

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestFrameRefusalIsNotLostToAReset: a client that does not keep to the
// server's max_msg_size sends a message frame over it and goes on writing
// its payload. The server refuses the frame at its header with a
// connection-level ERROR frame (frame_too_large, 1001, final). Threat:
// closed at once with the payload unread, the socket resets the
// connection, and the client, still writing, sees "connection reset"
// (2002, retryable) instead of the refusal, and retries a message that
// cannot pass. The connection ends as every refusal does
// (Server.closeAnswered: the sending side shut, what the peer still sends
// read and dropped for transport.AnswerLinger, within the linger shares;
// docs/SPEC-DECISIONS.md TRANSPORT-12).
func TestFrameRefusalIsNotLostToAReset(t *testing.T) {
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{MaxMessageSize: 1 << 20})
	r := dialRaw(t, addr)
	if !r.handshake(1).Accepted {
		t.Fatal("handshake refused")
	}
	var hdr [frameHeader]byte
	binary.BigEndian.PutUint32(hdr[:4], 1<<20+2)
	hdr[4] = FrameMessage
	junk := bytes.Repeat([]byte{0}, 4<<10)
	r.write(append(hdr[:], junk...))
	wantErrorFrame(t, r.br, amp.CodeInvalidMessage)
	for i := range 2 {
		if _, err := r.c.Write(junk); err != nil {
			t.Fatalf("write %d after the refused frame: %v (the server reset the connection: a client still writing loses the refusal)", i, err)
		}
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		t.Fatalf("after the refused frame: %v, want EOF (the server shut its side)", err)
	}
}
