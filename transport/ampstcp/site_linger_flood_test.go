package ampstcp

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOneSiteCannotTakeEveryLingerWithBadHandshakes: a refused
// HANDSHAKE lingers now (TRANSPORT-12), within the linger shares: 64 in
// all, 16 per peer. Attack: one host holding an IPv6 /48 (a tunnel
// broker gives one away; one interface can use all of it) sends a
// HANDSHAKE of another version from 16 addresses in each of four of its
// /64s and keeps the connections open: a few bytes each, 64
// refusals lingering, every linger slot taken (the fair gate counts that
// host as one peer, by its /48: TRANSPORT-9). Then another caller's
// refusal (here: its HANDSHAKE of another version, with its first
// message behind it) is closed at once with its bytes unread, the socket
// resets the connection, and the caller sees "connection reset"
// (retryable) instead of a refusal that cannot change. It keeps its
// linger: one site takes at most one peer's share of the slots
// (docs/SPEC-DECISIONS.md TRANSPORT-14).
func TestOneSiteCannotTakeEveryLingerWithBadHandshakes(t *testing.T) {
	ln, err := listenRemoteAs()
	if err != nil {
		t.Fatal(err)
	}
	// A linger long enough that every refusal of the site lingers at once.
	s := NewServer(echo(t, 0, nil), ServerOptions{answerLinger: 5 * time.Second})
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	addr := ln.Addr().String()
	other := AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 2, MaxMsgSize: 1 << 20}))
	refused := func(r *rawConn) {
		t.Helper()
		f, err := r.frame()
		if err != nil || f.Type != FrameHandshake {
			t.Fatalf("want the refused HANDSHAKE answer, got type %d, %v", f.Type, err)
		}
		if resp, err := DecodeHandshakeResponse(f.Payload); err != nil || resp.Accepted || resp.Error == nil || resp.Error.Code != amp.CodeUnsupportedVersion {
			t.Fatalf("handshake answer %+v, %v; want refused with unsupported_version", resp, err)
		}
	}
	for _, from := range siteFrom {
		for range maxPeerLingering {
			r := dialRawFrom(t, addr, &net.TCPAddr{IP: net.ParseIP(from)})
			r.write(other)
			refused(r)
		}
	}
	time.Sleep(100 * time.Millisecond) // every refusal has taken its slot, or not
	caller := dialRawFrom(t, addr, &net.TCPAddr{IP: net.ParseIP(callerFrom)})
	junk := bytes.Repeat([]byte{0}, 4<<10)
	caller.write(append(other, junk...))
	refused(caller)
	for i := range 2 {
		if _, err := caller.c.Write(junk); err != nil {
			t.Fatalf("another caller's write %d after its refused HANDSHAKE: %v: its refusal was closed at once, "+
				"one /48 holding every lingering slot from four of its /64s", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := caller.br.ReadByte(); err != io.EOF {
		t.Fatalf("after the refused handshake: %v, want EOF (the server shut its side)", err)
	}
}
