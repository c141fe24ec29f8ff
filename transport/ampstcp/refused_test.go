package ampstcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport"
)

// wantErrorFrame reads one ERROR frame from br with the code want.
func wantErrorFrame(t *testing.T, br *bufio.Reader, want amp.Code) {
	t.Helper()
	f, err := ReadFrame(br, 1<<20)
	if err != nil || f.Type != FrameError {
		t.Fatalf("want an ERROR frame, got type %d, %v", f.Type, err)
	}
	ef, err := DecodeErrorFrame(f.Payload)
	if err != nil || ef.Error.Code != want {
		t.Fatalf("ERROR frame %+v, %v; want code %d", ef, err, want)
	}
}

// TestRefusedConnectionsErrorFrameIsNotLostToAReset: a connection refused
// over the connection cap gets its ERROR frame (5004, retryable) even
// though its peer sent its HANDSHAKE and more at once (threat: closed at
// once with those bytes unread, the socket resets the connection, and a
// client still writing sees "connection reset" instead of "overloaded").
// The server shuts its side after the frame, reads what still comes for a
// short while, and closes: the connection is not held.
func TestRefusedConnectionsErrorFrameIsNotLostToAReset(t *testing.T) {
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{MaxConns: 1})
	held := dialRaw(t, addr)
	if !held.handshake(1).Accepted {
		t.Fatal("the first connection's handshake was refused")
	}
	r := dialRaw(t, addr)
	junk := bytes.Repeat([]byte{0}, 4<<10)
	r.write(append(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})), junk...))
	wantErrorFrame(t, r.br, amp.CodeOverloaded)
	// At once: the refusal lingers for transport.AnswerLinger only, and a
	// write after that may meet the close it ends with.
	for i := range 2 {
		if _, err := r.c.Write(junk); err != nil {
			t.Fatalf("write %d after the ERROR frame: %v (the server reset the connection)", i, err)
		}
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		t.Fatalf("after the ERROR frame: %v, want EOF (the server shut its side)", err)
	}
	eventually(t, "the server still holds the refused connection", func() (bool, string) {
		_, err := r.c.Write(junk)
		return err != nil, fmt.Sprintf("writes still accepted %v after the linger of %v", waitTimeout, transport.AnswerLinger)
	})
}

// TestTLSProtocolViolationGetsItsErrorFrame: on an amps:// listener, a
// peer whose first frame after the TLS handshake is not a HANDSHAKE gets
// the ERROR frame naming the violation, as on amp:// (only a connection
// refused before its TLS handshake is closed without a frame, since that
// handshake would wait for the peer).
func TestTLSProtocolViolationGetsItsErrorFrame(t *testing.T) {
	cert, pool := selfSigned(t)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(echo(t, 0, nil), ServerOptions{})
	go s.Serve(tls.NewListener(raw, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	t.Cleanup(func() { s.Close() })
	c, err := tls.Dial("tcp", raw.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	wantErrorFrame(t, bufio.NewReader(c), amp.CodeInvalidMessage)
}

// TestShutdownWaitsForALingeringRefusal: Shutdown returns only once a
// connection refused at accept has finished closing gracefully (threat: a
// server exiting while the refusal lingers, so that the ERROR frame it
// sent is reset after all); the linger bounds the wait.
func TestShutdownWaitsForALingeringRefusal(t *testing.T) {
	s, addr := startServer(t, echo(t, 0, nil), ServerOptions{MaxConns: 1})
	held := dialRaw(t, addr)
	if !held.handshake(1).Accepted {
		t.Fatal("the first connection's handshake was refused")
	}
	r := dialRaw(t, addr)
	r.write(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})))
	wantErrorFrame(t, r.br, amp.CodeOverloaded)
	held.c.Close() // nothing else for Shutdown to wait for
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("Shutdown returned after %v, while the refusal was still lingering (up to %v)", took, transport.AnswerLinger)
	}
}
