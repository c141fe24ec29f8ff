package amphttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestHTTP2AnswerWithoutWindowHoldsNoStreamPastTheGrace: over HTTP/2
// (NewServer under ServeTLS) a peer sets its flow-control window to 0
// and fills a connection's maxStreams streams with requests the binding
// answers itself: /healthz, a 404, a 405, a POST refused 415 or 413 whose
// body (a DATA frame of 60 KiB each, within the server's 1 MiB receive
// window) it leaves unread. The agent's own answers are written under the
// minimum data rate (TRANSPORT-4), but these had only the server's write
// timeout (90 s by default, 150 s under ampagent serve): every stream,
// its handler and the unread body bytes the server buffered for it (up
// to 1 MiB a connection, charged to no share) were held that long, for a
// few bytes of HEADERS and DATA each, renewed at every write timeout. Now
// such an answer, a few hundred bytes, must be taken whole within the
// grace (docs/SPEC-DECISIONS.md TRANSPORT-31): after many graces no
// stream is held and the buffered body bytes are given back (the server's
// connection WINDOW_UPDATEs).
func TestHTTP2AnswerWithoutWindowHoldsNoStreamPastTheGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	const bodyPerStream = 60 << 10 // 16 of them fit the server's 1 MiB connection window
	get := func(path string) []byte {
		return append([]byte{0x82, 0x87}, append(hpackLiteral(4, path), hpackLiteral(1, "agent")...)...)
	}
	post := func(fields ...[]byte) []byte {
		b := append([]byte{0x83, 0x87}, append(hpackLiteral(4, MessagesPath), hpackLiteral(1, "agent")...)...)
		for _, f := range fields {
			b = append(b, f...)
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		headers []byte
		body    bool // a DATA frame follows, left unread, the stream left open
	}{
		{"healthz", get(HealthPath), false},
		{"no such route", get("/nowhere"), false},
		{"method not allowed", get(MessagesPath), false},
		{"redirect to the clean path", get("/nowhere/.." + HealthPath), false},
		{"wrong content type, body unread", post(), true},
		{"declared length over MaxBody, body unread", post(hpackLiteral(31, ContentType), hpackLiteral(28, "33554432")), true},
		{"the agent's reply (TRANSPORT-4)", post(hpackLiteral(31, ContentType)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
			srv := startH2Server(t, h, Options{grace: grace})
			held, unread := h2AnswersWithoutWindow(t, srv, tc.headers, tc.body, bodyPerStream, 30*grace)
			if held != 0 || unread != 0 {
				t.Fatalf("%v after the answers began (a grace of %v): %d of %d streams still held, %d body bytes still buffered unread; want 0 and 0 well before",
					30*grace, grace, held, maxStreams, unread)
			}
		})
	}
}

// h2AnswersWithoutWindow opens an HTTP/2 connection to srv whose
// flow-control window is 0, opens maxStreams streams of the header block
// headers (END_STREAM, or, with body, followed by a DATA frame of
// bodyLen bytes without END_STREAM), waits until each is answered with a
// head, and then reads the connection until every stream is reset and
// every body byte given back, or for wait at most. It returns how many of
// the streams the server still holds open (not reset) and how many of
// the body bytes sent it has not given back to the connection's window.
func h2AnswersWithoutWindow(t *testing.T, srv *testServer, headers []byte, body bool, bodyLen int, wait time.Duration) (held, unread int) {
	t.Helper()
	raw, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	settings := make([]byte, 6)
	binary.BigEndian.PutUint16(settings, 0x4) // SETTINGS_INITIAL_WINDOW_SIZE: 0
	out := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	out = append(out, h2Frame(0x4, 0, 0, settings)...)
	out = append(out, h2Frame(0x4, 0x1, 0, nil)...) // ACK of the server's
	sent := 0
	for i := range maxStreams {
		id := uint32(2*i + 1)
		if !body {
			out = append(out, h2Frame(0x1, 0x5, id, headers)...) // HEADERS, END_STREAM|END_HEADERS
			continue
		}
		out = append(out, h2Frame(0x1, 0x4, id, headers)...) // HEADERS, END_HEADERS
		out = append(out, h2Frame(0x0, 0, id, bytes.Repeat([]byte{0xa0}, bodyLen))...)
		sent += bodyLen
	}
	go c.Write(out)
	heads, reset := map[uint32]bool{}, map[uint32]bool{}
	back, open := 0, maxStreams // open: the streams the server took (all, or those up to a GOAWAY's last)
	var head [9]byte
	for len(heads) < open || len(reset) < open || unreadOf(sent, back) > 0 {
		if len(heads) == open && wait > 0 {
			c.SetReadDeadline(time.Now().Add(wait)) // the answers began: the grace runs
			wait = 0
		}
		if _, err := io.ReadFull(c, head[:]); err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded) && len(heads) == open:
				return open - len(reset), unreadOf(sent, back)
			case open < maxStreams && errors.Is(err, io.EOF):
				return 0, 0 // gone after its GOAWAY: it holds nothing more
			}
			t.Fatalf("after %d heads and %d resets: %v", len(heads), len(reset), err)
		}
		size := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		payload := make([]byte, size)
		if _, err := io.ReadFull(c, payload); err != nil {
			t.Fatal(err)
		}
		stream := binary.BigEndian.Uint32(head[5:]) &^ (1 << 31)
		switch head[3] {
		case 0x1: // HEADERS
			heads[stream] = true
		case 0x3: // RST_STREAM
			reset[stream] = true
		case 0x8: // WINDOW_UPDATE
			if stream == 0 && size == 4 {
				back += int(binary.BigEndian.Uint32(payload) &^ (1 << 31))
			}
		case 0x7: // GOAWAY (Connection: close, a 413 or 503): the streams past its last are not taken
			if size >= 4 {
				last := int(binary.BigEndian.Uint32(payload) &^ (1 << 31))
				open = min(open, (last+1)/2)
			}
		}
	}
	return open - len(reset), unreadOf(sent, back)
}

// unreadOf is how many of sent body bytes the server has not given back,
// when its connection WINDOW_UPDATEs added back in all: the first one
// only raised its window from HTTP/2's 65,535 to its receive buffer
// (net/http's default, 1 MiB).
func unreadOf(sent, back int) int {
	return max(sent-max(back-(1<<20-65535), 0), 0)
}
