package mirror

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestH2StuckPeerSlotComesBack: over HTTP/2 a stream's write deadline (the
// minimum data rate of MIRROR-14) resets only the stream, and the
// RST_STREAM frame cannot be written behind the answer's data already
// stuck in a connection whose peer reads nothing: the handler stays
// blocked and its request slot held for as long as the peer keeps the
// connection. Attack: a peer opens an HTTP/2 connection over TLS, gives
// the server the largest flow-control window (so the server has data to
// write), asks for a large bundle file and never reads again (a zero TCP
// window). The server mirror.NewHTTPServer builds closes a connection to
// which nothing could be written for admission.FrameGrace
// (HTTP2Config.WriteByteTimeout, MIRROR-14 amended), which ends the
// handler and gives its slot back; without it the slot is held until
// the peer leaves. The bound: the stream's own deadline (the grace, 300
// ms here) passes first; the connection is closed FrameGrace (5 s) after
// its last byte was written, and closing a TLS connection whose send
// buffer is full waits up to its own 5 s for the close_notify alert: 10
// s. The slot is seen in the server's own request count
// (transport.Admission.Requests), not by a probe over TLS, and the test
// fails, at 40 s (room for a loaded machine), if NewHTTPServer sets no
// WriteByteTimeout: the slot is then held until the peer leaves.
func TestH2StuckPeerSlotComesBack(t *testing.T) {
	m, err := New(Options{Open: func() (Source, error) { return bigBundleSource{size: 64 << 20}, nil },
		SpoolDir: t.TempDir(), MaxInFlight: 4, MaxPeerInFlight: 1, grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(m)
	ts.Config = NewHTTPServer(m, 0, nil)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)

	stuck := stallH2(t, ts.Listener.Addr().String(), BundlesPrefix+"org.example.big")
	t.Cleanup(func() { stuck.Close() }) // before ts.Close, which waits for the handler

	deadline := time.Now().Add(10 * time.Second)
	for m.slots.Requests() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the stalled HTTP/2 download never held its slot (the test proves nothing)")
		}
		time.Sleep(2 * time.Millisecond)
	}
	start := time.Now()
	for m.slots.Requests() != 0 {
		if time.Since(start) > 40*time.Second {
			t.Fatal("an HTTP/2 peer reading nothing still holds its mirror slot 40 s on: the server never closes its connection (no HTTP2Config.WriteByteTimeout)")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("slot back %v after it was seen held", time.Since(start).Round(100*time.Millisecond))
	if got := tlsIndexStatus(ts.URL); got != http.StatusOK {
		t.Fatalf("after the slot came back the peer's next request was answered %d, want 200", got)
	}
}

// tlsIndexStatus is the status of GET /index.json over HTTP/1.1 and TLS
// on a new connection (0: no answer).
func tlsIndexStatus(url string) int {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(url + IndexPath)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// stallH2 opens an HTTP/2 connection over TLS to addr with a small
// socket receive buffer, opens the largest flow-control windows (stream
// and connection), sends one GET of path and from then on reads nothing.
// The standard library's client reads every frame that comes (it buffers
// up to its window), so the frames are written by hand.
func stallH2(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.Handshake(); err != nil || c.ConnectionState().NegotiatedProtocol != "h2" {
		c.Close()
		t.Fatalf("no HTTP/2 over TLS: %v %q", err, c.ConnectionState().NegotiatedProtocol)
	}
	const maxWindow = 1<<31 - 1
	var settings [6]byte
	binary.BigEndian.PutUint16(settings[:], 0x4) // SETTINGS_INITIAL_WINDOW_SIZE
	binary.BigEndian.PutUint32(settings[2:], maxWindow)
	var grow [4]byte
	binary.BigEndian.PutUint32(grow[:], maxWindow-65535)
	out := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	out = h2Frame(out, 0x4, 0, 0, settings[:]) // SETTINGS
	out = h2Frame(out, 0x8, 0, 0, grow[:])     // WINDOW_UPDATE, connection
	if _, err := c.Write(out); err != nil {
		c.Close()
		t.Fatal(err)
	}
	// Read the server's frames up to its SETTINGS, and acknowledge them.
	for {
		var hdr [9]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			c.Close()
			t.Fatal(err)
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			c.Close()
			t.Fatal(err)
		}
		if hdr[3] == 0x4 && hdr[4]&0x1 == 0 {
			break
		}
	}
	// HPACK: each field a literal without indexing, new name, no Huffman.
	var block []byte
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "mirror"}, {":path", path}} {
		block = append(block, 0)
		block = append(append(block, byte(len(f[0]))), f[0]...)
		block = append(append(block, byte(len(f[1]))), f[1]...)
	}
	out = h2Frame(nil, 0x4, 0x1, 0, nil)       // SETTINGS ACK
	out = h2Frame(out, 0x1, 0x1|0x4, 1, block) // HEADERS, END_STREAM|END_HEADERS
	if _, err := c.Write(out); err != nil {
		c.Close()
		t.Fatal(err)
	}
	c.SetDeadline(time.Time{})
	return c
}

// h2Frame appends an HTTP/2 frame of type typ with flags on stream to b.
func h2Frame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, payload...)
}
