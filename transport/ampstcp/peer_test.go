package ampstcp

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestRefusedTLSConnectionsAreClosedAtOnce: on an amps:// listener, a
// connection over its peer's share is closed at once (threat: a host that
// connects and sends nothing, keeping every refused connection open, a
// file descriptor and a goroutine each, while the refusal's TLS handshake
// waits for a ClientHello that never comes).
func TestRefusedTLSConnectionsAreClosedAtOnce(t *testing.T) {
	cert, pool := selfSigned(t)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := tls.NewListener(raw, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	s := NewServer(echo(t, 0, nil), ServerOptions{MaxConns: 64, MaxPeerConns: 1})
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	addr := raw.Addr().String()
	from := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 50)}
	held, err := (&net.Dialer{LocalAddr: from}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	tc := tls.Client(held, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	tc.Write(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})))
	if f, err := ReadFrame(bufio.NewReader(tc), 1<<20); err != nil || f.Type != FrameHandshake {
		t.Fatalf("the connection within the share: %v, frame type %d", err, f.Type)
	}
	var over []net.Conn
	for range 20 {
		c, err := (&net.Dialer{LocalAddr: from}).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		over = append(over, c)
	}
	for i, c := range over {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d over the peer's share is still open after 2 s", i)
		}
	}
}

// TestOnePeerCannotHoldEveryMessageSlot: a host whose messages are slow
// to handle holds at most its share of the server-wide message slots,
// however many connections it uses (threat: 8 connections of 64 messages
// holding all 512 slots with the defaults, so that no other host's
// message is handled); another host's message is handled meanwhile.
func TestOnePeerCannotHoldEveryMessageSlot(t *testing.T) {
	h := &holdingHandler{release: make(chan struct{})}
	defer close(h.release)
	srv, addr := startServer(t, h, ServerOptions{MaxConns: 16, MaxPeerConns: 4, MaxInFlight: 4, MaxInFlightTotal: 8})
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 60)}
	msgLen := int64(len(fakeMessage(t, newID(), nil)))
	for range 2 {
		r := dialRawFrom(t, addr, a)
		if !r.handshake(1).Accepted {
			t.Fatal("handshake refused")
		}
		for range 4 {
			r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
		}
	}
	// Saturated: two messages in the handler and each connection's read
	// loop holding one more it cannot dispatch (four charged to the
	// host), so no more of the host's messages can start; the peak of
	// messages in the handler is a true maximum, not a sample (more than
	// 2 at once ends the wait early).
	eventually(t, "the host's messages did not fill its share", func() (bool, string) {
		n, held := h.running.Load(), srv.peerInFlightBytes("127.0.0.60")
		return n == 2 && held == 4*msgLen || h.peakRunning.Load() > 2, fmt.Sprintf("%d in the handler, %d bytes charged to the host", n, held)
	})
	if n := h.peakRunning.Load(); n != 2 {
		t.Fatalf("%d of the host's messages were handled at once, want its share of 2 (a quarter of 8)", n)
	}
	b := dialRawFrom(t, addr, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 61)})
	if !b.handshake(1).Accepted {
		t.Fatal("another peer's handshake refused")
	}
	b.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	eventually(t, "another host's message is not handled while the first holds its share", func() (bool, string) {
		n := h.running.Load()
		return n == 3, fmt.Sprintf("%d in the handler", n)
	})
	if n := h.peakRunning.Load(); n != 3 {
		t.Fatalf("%d messages were handled at once, want the host's share of 2 and the other host's 1", n)
	}
}
