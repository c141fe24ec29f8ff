//go:build unix

package catalog

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// smallBuffers is a listener whose connections buffer little of what the
// server writes, as a slow network's full buffers do.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// TestSlowReaderCannotHoldThePageSlots: a peer holds at most four
// of the sixteen pages in flight (DefaultPeerShare). Attack: it asks four
// times for a large page (a 1 MiB schema page) and never reads the
// answers. Today the handler writes with no deadline of its own, so each
// answer holds its page slot for the server's write timeout (10 minutes
// on the mirror, none here): the peer's further pages get 503, and four
// such peers hold every slot of the catalog. It should write at the
// minimum data rate the mirror writes its files at (after
// admission.FrameGrace, 5 s), and cut the peer off below it, freeing the
// slot: here within 30 s (5 s of grace, plus the few KB the buffers took
// at 128 KiB/s, plus the renderings on a loaded machine: the room is
// generous, as without the rate the slots are held for good). That the
// slots are held, and then given back, is seen in the handler's own
// count (transport.Admission.Requests), not by a probe's timing.
func TestSlowReaderCannotHoldThePageSlots(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(30000))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = smallBuffers{ln}
	srv.Start()
	defer srv.Close()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	}}
	for range DefaultMaxInFlight / DefaultPeerShare {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /ui/schema?b=org.hostile&k=deep.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		// Reads the status line only, then nothing: the page is being
		// written.
		if _, err := bufio.NewReaderSize(c, 16).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	// The four answers hold the peer's four slots (each read its status
	// line, so each is being written).
	if n := h.slots.Requests(); n != DefaultMaxInFlight/DefaultPeerShare {
		t.Fatalf("test setup: %d pages in flight, want the %d being written (the test proves nothing)", n, DefaultMaxInFlight/DefaultPeerShare)
	}
	start := time.Now()
	for h.slots.Requests() != 0 {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("four answers nobody reads still hold the peer's page slots after %v (%d in flight)", time.Since(start).Round(time.Second), h.slots.Requests())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the slots are given back after %v", time.Since(start).Round(time.Millisecond))
	res, err := http.Get(srv.URL + "/ui/trust")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("after the cut the peer's next page was answered %d, want 200", res.StatusCode)
	}
}
