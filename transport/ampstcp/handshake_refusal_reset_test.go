package ampstcp

import (
	"bytes"
	"io"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestHandshakeRefusalIsNotLostToAReset: a client of another version
// of the binding sends its HANDSHAKE and, at once, its first messages (as
// it may: the server reads frames sent behind an accepted HANDSHAKE). The
// server refuses the handshake (unsupported_version, 1004, final). Threat:
// closed at once with those bytes unread, the socket resets the
// connection, and the client, still writing, sees "connection reset" (a
// delivery failure, 2002, retryable) instead of the refusal, and retries
// a refusal that cannot change. The refused HANDSHAKE is closed as every
// other refusal is (Server.closeAnswered: the sending side shut, what the
// peer still sends read and dropped for transport.AnswerLinger, within
// the linger shares; docs/SPEC-DECISIONS.md TRANSPORT-12).
func TestHandshakeRefusalIsNotLostToAReset(t *testing.T) {
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{})
	r := dialRaw(t, addr)
	junk := bytes.Repeat([]byte{0}, 4<<10)
	r.write(append(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 2, MaxMsgSize: 1 << 20})), junk...))
	f, err := r.frame()
	if err != nil || f.Type != FrameHandshake {
		t.Fatalf("want the refused HANDSHAKE answer, got type %d, %v", f.Type, err)
	}
	resp, err := DecodeHandshakeResponse(f.Payload)
	if err != nil || resp.Accepted || resp.Error == nil || resp.Error.Code != amp.CodeUnsupportedVersion {
		t.Fatalf("handshake answer %+v, %v; want refused with unsupported_version", resp, err)
	}
	// The client still writes (its messages were on their way).
	for i := range 2 {
		if _, err := r.c.Write(junk); err != nil {
			t.Fatalf("write %d after the refused handshake: %v (the server reset the connection: a client still writing loses the refusal)", i, err)
		}
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		t.Fatalf("after the refused handshake: %v, want EOF (the server shut its side)", err)
	}
}
