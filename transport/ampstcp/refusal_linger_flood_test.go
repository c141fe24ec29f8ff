package ampstcp

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRefusalFloodLeavesOtherPeersTheirLinger: a refused connection
// gets its ERROR frame (5004, retryable) and lingers
// (transport.CloseAfterAnswer) so that a peer still writing reads it
// instead of a reset; the lingering connections are bounded
// (maxLingering), beyond which one is closed at once. A peer that opens
// refused connections in a loop and keeps them open would take every
// lingering slot, so that every other peer's refusal, its bytes unread,
// becomes a reset ("connection reset" instead of "overloaded, retry").
// One peer holds at most maxPeerLingering of the slots: beyond its share
// its own refusals are closed at once, and another peer's refusal still
// lingers.
func TestRefusalFloodLeavesOtherPeersTheirLinger(t *testing.T) {
	// A linger long enough that the flood's refusals all linger at once.
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{MaxConns: 1, answerLinger: 5 * time.Second})
	flooder := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 71)}
	held := dialRawFrom(t, addr, flooder)
	if !held.handshake(1).Accepted {
		t.Fatal("the first connection's handshake was refused")
	}
	// The flooder's refusals, kept open: each one lingers, or is closed.
	for range maxLingering {
		r := dialRawFrom(t, addr, flooder)
		wantErrorFrame(t, r.br, amp.CodeOverloaded)
	}
	time.Sleep(100 * time.Millisecond) // every refusal has taken its slot, or not
	other := dialRawFrom(t, addr, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 72)})
	junk := bytes.Repeat([]byte{0}, 4<<10)
	other.write(append(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})), junk...))
	wantErrorFrame(t, other.br, amp.CodeOverloaded)
	// Closed at once with the handshake and junk unread, the socket has
	// reset the connection: a write then fails (the first may still be
	// buffered; the reset has arrived well within the pause).
	for i := range 2 {
		if _, err := other.c.Write(junk); err != nil {
			t.Fatalf("another peer's write %d after its ERROR frame: %v: its refusal was closed at once, "+
				"a flooding peer holding every lingering slot", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
