package ampstcp

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/transport"
)

// TestTLSRefusalCannotOutlastTheLinger: a refused connection is
// closed by transport.CloseAfterAnswer, which "returns after at most
// linger" (500 ms), within the linger shares (Server.closeAnswered;
// amphttp's 413 and 503 likewise). Attack: an amps:// (or https://)
// peer that stops reading once its socket's buffers are full, then
// provokes a refusal. Shutting the sending side of a TLS connection
// writes a close_notify alert, which tls.Conn gives 5 s of its own write
// deadline whatever the caller set: the refused connection, its linger
// slot, file descriptor and goroutine were held ten times the linger,
// 5.5 s. The whole close, the alert included, takes at most the linger
// (here 200 ms; bounded at 2.5 s, generous for a loaded machine and half
// of tls.Conn's 5 s; docs/SPEC-DECISIONS.md TRANSPORT-15).
func TestTLSRefusalCannotOutlastTheLinger(t *testing.T) {
	cert, pool := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	peer := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	sc := <-accepted
	if sc == nil {
		t.Fatal("accept failed")
	}
	srv := tls.Server(sc, &tls.Config{Certificates: []tls.Certificate{cert}})
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	if err := peer.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The peer reads no more: what the server sent before fills both
	// sockets' buffers (written below TLS here, to fill them exactly:
	// a write that finds no room at all).
	sc.(*net.TCPConn).SetWriteBuffer(4 << 10)
	chunk := make([]byte, 4<<10)
	for {
		sc.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		if n, err := sc.Write(chunk); err != nil && n == 0 {
			break
		}
	}
	sc.SetWriteDeadline(time.Time{})
	start := time.Now()
	transport.CloseAfterAnswer(srv, 200*time.Millisecond, transport.AnswerDrain)
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("a TLS peer that does not read held its refused connection %v, want the linger (200ms): the close_notify alert waited for tls.Conn's own 5 s", took.Round(time.Millisecond))
	}
}
