//go:build unix

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// smallSendBuffers accepts connections whose send buffer is small, so
// that an answer of some tens of KiB fills what the kernels hold between
// the server and a peer that reads nothing (on a real link the peer's
// zero window does it whatever the size).
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// dialNoReader connects with a small receive buffer and sends a GET of
// path, reading nothing of the answer.
func dialNoReader(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPeerThatReadsNoAGHAnswerCannotHoldTheBuildSlots: an AGH answer
// that no kept one serves (a narrowed catalog, a transfer) is built in
// one of agh.DefaultMaxBuilding (4) slots, for every caller together,
// and the slot is held until the answer is written. Under ampagent serve
// the AGH routes had the server's write timeout alone (150 s and more):
// a peer that opened four connections, asked each for a narrowed
// catalog and read nothing of the answers held all four slots for that
// long, and every other caller's narrowed catalog and transfer was
// refused, 503 overloaded. The routes beside the agent's are written at
// the minimum data rate (rateSideRoutes, TRANSPORT-32): the unread
// answers are cut off once their deadline passed (a grace of 2 s here,
// long enough that a loaded machine sees the slots held first) and the
// slots come back. The count of slots still held is what
// is checked (every probe's answer is 200 or 503), not a time.
func TestPeerThatReadsNoAGHAnswerCannotHoldTheBuildSlots(t *testing.T) {
	now := testNow()
	s, mux := aghStore(t, func() time.Time { return now })
	importBundle(t, s, manyCapabilityBundle(t, "org.example.many", 400, now.Add(-time.Hour), time.Time{}))
	// A narrowed catalog of 240 capabilities: 128,926 bytes, far more
	// than the small buffers hold.
	var q []string
	for i := range 240 {
		q = append(q, fmt.Sprintf("id=org.example.many.c%05d:1.0.0", i))
	}
	big := agh.CatalogPath + "?" + strings.Join(q, "&")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := amphttp.NewServer(rateSideRoutes(mux, 2*time.Second), 150*time.Second, nil)
	go srv.Serve(smallSendBuffers{ln})
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	probe := func() int {
		resp, err := http.Get("http://" + addr + agh.CatalogPath + "?id=org.example.many.c00001:1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := probe(); got != http.StatusOK {
		t.Fatalf("a narrowed catalog with no one holding the slots: %d, want 200", got)
	}

	for range agh.DefaultMaxBuilding {
		dialNoReader(t, addr, big)
	}
	// The test proves something only if the unread answers held every
	// slot at first.
	// Up to 5 s: on a loaded machine (CI under the race detector) the
	// four builds can take more than a second to start; the slots stay
	// held for the 2 s grace at least once they have.
	held := false
	for range 500 {
		if probe() == http.StatusServiceUnavailable {
			held = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !held {
		t.Fatal("the unread answers never held the build slots (the test proves nothing)")
	}
	// Their deadline is the grace plus 126 KiB at the minimum data rate:
	// about 3 s. A hundred probes, 200 ms apart, leave them 20 s.
	for range 100 {
		if probe() == http.StatusOK {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("a peer that reads none of its %d narrowed catalogs still holds every AGH build slot 20 s on: another caller is refused 503 (the answers have the write timeout alone)", agh.DefaultMaxBuilding)
}
