package amphttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/transport"
)

// startH2Server is startServer over TLS with HTTP/2, as NewServer's
// http.Server serves it under ServeTLS (h2 is on by default there).
func startH2Server(t *testing.T, h Handler, opts Options) *testServer {
	t.Helper()
	s := newServer(h, opts)
	srv := httptest.NewUnstartedServer(s.routes())
	srv.Config = NewServer(srv.Config.Handler, 0, nil)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, adm: s.adm}
}

// h2Frame is one raw HTTP/2 frame.
func h2Frame(typ, flags byte, stream uint32, payload []byte) []byte {
	b := make([]byte, 9, 9+len(payload))
	b[0], b[1], b[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	b[3], b[4] = typ, flags
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

// hpackLiteral is a header field "literal without indexing" whose name
// is the static table's entry idx (HPACK, RFC 7541 §6.2.2), value short.
func hpackLiteral(idx int, value string) []byte {
	var b []byte
	if idx < 15 {
		b = []byte{byte(idx)}
	} else {
		b = []byte{0x0f, byte(idx - 15)}
	}
	return append(append(b, byte(len(value))), value...)
}

// TestHTTP2PeerThatStopsReadingCannotPinItsReplyCharge: over HTTP/2 (what
// NewServer's server speaks under ServeTLS) a peer opens a huge flow
// control window, posts one small message whose reply is large, and then
// reads nothing from its socket. The reply's write deadline
// (transport.RateWriter, SetWriteDeadline: a per-stream timer in
// net/http's HTTP/2 server) fires, but the stream is only reset once its
// RST_STREAM frame is written, behind the DATA frames stuck in the
// connection's write (net/http clears the connection's write deadline for
// HTTP/2, and HTTP2Config.WriteByteTimeout is left 0): the handler never
// returns, and the reply's charge — to the peer's share and the server's
// bytes — is held for as long as the peer keeps the connection open,
// not "for seconds" (TRANSPORT-4). Many peers so pin the whole budget and
// every POST of everyone is 503, for good. NewServer now closes the
// connection a grace after the answer's write deadline (ConnContext,
// answer's writeGuard) and one nothing can be written to for
// admission.FrameGrace (HTTP2Config.WriteByteTimeout). The charge goes
// within about a second here; without the close it is held until the
// peer leaves, so the 30 s the test allows is a hang guard with room for
// a loaded machine.
func TestHTTP2PeerThatStopsReadingCannotPinItsReplyCharge(t *testing.T) {
	const replyLen = 8 << 20 // far over loopback's socket buffers
	reply := bytes.Repeat([]byte{0x41}, replyLen)
	returned := make(chan struct{}, 1)
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		returned <- struct{}{}
		return reply, nil
	})
	srv := startH2Server(t, h, Options{grace: 300 * time.Millisecond})

	const from = "127.0.0.52"
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	raw, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() }) // before srv.Close: a reset unblocks the server's write
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	body := []byte{0xa0}
	var hdrs []byte
	hdrs = append(hdrs, 0x83, 0x87) // :method POST, :scheme https
	hdrs = append(hdrs, hpackLiteral(4, MessagesPath)...)
	hdrs = append(hdrs, hpackLiteral(1, "agent")...)
	hdrs = append(hdrs, hpackLiteral(31, ContentType)...)
	hdrs = append(hdrs, hpackLiteral(28, strconv.Itoa(len(body)))...)
	settings := make([]byte, 6)
	binary.BigEndian.PutUint16(settings, 0x4) // SETTINGS_INITIAL_WINDOW_SIZE
	binary.BigEndian.PutUint32(settings[2:], 1<<31-1)
	window := make([]byte, 4)
	binary.BigEndian.PutUint32(window, 1<<31-1-65535)
	var out []byte
	out = append(out, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"...)
	out = append(out, h2Frame(0x4, 0, 0, settings)...)
	out = append(out, h2Frame(0x4, 0x1, 0, nil)...) // ACK of the server's
	out = append(out, h2Frame(0x8, 0, 0, window)...)
	out = append(out, h2Frame(0x1, 0x4, 1, hdrs)...) // HEADERS, END_HEADERS
	out = append(out, h2Frame(0x0, 0x1, 1, body)...) // DATA, END_STREAM
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not called")
	}
	// From here the peer reads nothing.
	peer := transport.Peer(raw.LocalAddr().String())
	deadline := time.Now().Add(30 * time.Second)
	for srv.adm.PeerBytes(peer) != 0 || srv.adm.Bytes() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an HTTP/2 peer that stopped reading still has %d bytes charged (server %d) 30 s after its handler returned, "+
				"with a write grace of 300 ms: the reply's write deadline resets the stream only once the connection's stuck write ends, "+
				"so the charge is held for as long as the peer keeps its connection", srv.adm.PeerBytes(peer), srv.adm.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
