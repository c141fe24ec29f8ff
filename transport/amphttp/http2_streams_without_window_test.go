package amphttp

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// TestHTTP2ConnectionWithoutWindowPinsNoMoreHandlersThanAShare: over
// HTTP/2 (NewServer under ServeTLS) a peer sets its flow-control window
// to 0 (SETTINGS_INITIAL_WINDOW_SIZE) and opens stream after stream
// asking for anything with a body: /healthz, a 404, a POST refused 503.
// Each handler writes its head and then waits for a window that never
// opens, its stream open, until the server's write timeout (90 s by
// default, 150 s under ampagent serve); none of them is admitted, so no
// share counts them. net/http lets a connection have 250 streams open:
// one connection pinned 250 handlers (about 3 MiB), one address a
// quarter of the listener's 1,024 connections (some 800 MiB) for a few
// bytes of HEADERS each. A connection now has at most maxStreams open
// (docs/SPEC-DECISIONS.md TRANSPORT-29); the streams past them are
// refused (RST_STREAM) at once, holding nothing.
func TestHTTP2ConnectionWithoutWindowPinsNoMoreHandlersThanAShare(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	srv := startH2Server(t, h, Options{})
	for _, tc := range []struct {
		name    string
		headers []byte
	}{
		{"healthz", append([]byte{0x82, 0x87}, append(hpackLiteral(4, HealthPath), hpackLiteral(1, "agent")...)...)},
		{"no such route", append([]byte{0x82, 0x87}, append(hpackLiteral(4, "/nowhere"), hpackLiteral(1, "agent")...)...)},
		{"wrong content type", append([]byte{0x83, 0x87}, append(hpackLiteral(4, MessagesPath), hpackLiteral(1, "agent")...)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const streams = 300
			open := h2StreamsWithoutWindow(t, srv, tc.headers, streams)
			if open > maxStreams {
				t.Fatalf("one HTTP/2 connection without a flow-control window holds %d of %d streams open (each a handler waiting for the write timeout), want at most %d",
					open, streams, maxStreams)
			}
			if open == 0 {
				t.Fatal("no stream was answered at all")
			}
		})
	}
}

// h2StreamsWithoutWindow opens an HTTP/2 connection to srv whose
// flow-control window is 0, sends n streams of the header block
// headers (END_STREAM), and returns how many the server answered with a
// head (their handlers now wait for a window) by the time each stream is
// answered or refused.
func h2StreamsWithoutWindow(t *testing.T, srv *testServer, headers []byte, n int) int {
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
	for i := range n {
		out = append(out, h2Frame(0x1, 0x5, uint32(2*i+1), headers)...) // HEADERS, END_STREAM|END_HEADERS
	}
	go c.Write(out)
	heads, refused := map[uint32]bool{}, map[uint32]bool{}
	var head [9]byte
	for len(heads)+len(refused) < n {
		if _, err := io.ReadFull(c, head[:]); err != nil {
			t.Fatalf("after %d heads and %d refusals: %v", len(heads), len(refused), err)
		}
		size := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		if _, err := io.CopyN(io.Discard, c, int64(size)); err != nil {
			t.Fatal(err)
		}
		stream := binary.BigEndian.Uint32(head[5:]) &^ (1 << 31)
		switch head[3] {
		case 0x1: // HEADERS
			heads[stream] = true
		case 0x3: // RST_STREAM
			refused[stream] = true
		case 0x7: // GOAWAY
			t.Fatalf("the server went away after %d heads and %d refusals", len(heads), len(refused))
		}
	}
	return len(heads)
}
