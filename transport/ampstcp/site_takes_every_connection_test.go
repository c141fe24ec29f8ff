package ampstcp

import (
	"net"
	"testing"
	"time"
)

// TestOneSiteCannotTakeEveryConnection: the server accepts at
// most MaxConns connections, a quarter of them (MaxPeerConns) from one
// peer, "so one host cannot take every connection and keep it with
// PINGs" (docs/TRANSPORT.md §8). Attack: one host holding an IPv6 /48
// (one interface can use all of it; an IPv4 host's 6to4 /48 is one peer
// now, TRANSPORT-10) opens its share of connections from each of four of
// its /64s and keeps them. Each /64 was a peer of its own: the four
// take every connection, and every other caller's connection is refused
// (5004) for as long as the host keeps them. It holds one peer's share,
// as the agent's slots count it (a /48 is one peer: TRANSPORT-9,
// TRANSPORT-14), and another caller still connects.
func TestOneSiteCannotTakeEveryConnection(t *testing.T) {
	ln, err := listenRemoteAs()
	if err != nil {
		t.Fatal(err)
	}
	const maxConns = 8 // a quarter, 2, per peer
	s := NewServer(echo(t, 0, nil), ServerOptions{MaxConns: maxConns})
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	addr := ln.Addr().String()
	hello := AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20}))
	for _, from := range siteFrom {
		for range maxConns / 4 {
			r := dialRawFrom(t, addr, &net.TCPAddr{IP: net.ParseIP(from)})
			r.write(hello)
			r.frame() // accepted, or refused beyond the share
		}
	}
	time.Sleep(50 * time.Millisecond)
	caller := dialRawFrom(t, addr, &net.TCPAddr{IP: net.ParseIP(callerFrom)})
	caller.write(hello)
	f, err := caller.frame()
	if err != nil || f.Type != FrameHandshake {
		t.Fatalf("another caller got frame type %d, %v; want its HANDSHAKE answered: one /48 holds every connection from four of its /64s", f.Type, err)
	}
	if resp, err := DecodeHandshakeResponse(f.Payload); err != nil || !resp.Accepted {
		t.Fatalf("another caller's handshake: %+v, %v; want accepted", resp, err)
	}
}
