package amphttp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/transport"
)

// TestUnreadRepliesOfLargeBodiesLeaveSmallBodiesTheirEighth: the HTTP
// side of transport's TestRepliesOfLargeBodiesStillLeaveSmallBodiesTheirEighth.
// Four peers each post a large body (6.5 MiB) answered by a reply of the
// same size that they do not read; once answered, the body's large charge
// becomes a small reply charge (held.answered, Admission.Answer), so a
// fifth large body counts as alone and takes the eighth of the budget
// kept for small bodies (SmallReserve, "the large ones leave
// transport.SmallReserve of the server's bytes to small ones"): a 32 KiB
// message of a sixth peer is 503. Before the mend the large charge stayed
// large until the answer was written, and the fifth large body was the
// one refused. A reply over SmallBody is now charged to the large part
// (transport.Admission.Answer).
func TestUnreadRepliesOfLargeBodiesLeaveSmallBodiesTheirEighth(t *testing.T) {
	const (
		budget = 32 << 20       // SmallReserve: 4 MiB
		large  = 13 << 19       // 6.5 MiB; four fit the large part, 28 MiB
		last   = 6<<20 - 16<<10 // fits what the replies leave, the eighth included
		small  = 32 << 10
	)
	returned := make(chan int, 1)
	hold := make(chan struct{})
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		returned <- len(msg)
		switch len(msg) {
		case large:
			return bytes.Repeat([]byte{0x41}, large), nil
		case last:
			<-hold // handled while the small one comes
		}
		return []byte{0xa0}, nil
	})
	srv := startServer(t, h, Options{MaxBody: 8 << 20, MaxInFlightBytes: budget, grace: 15 * time.Second})
	t.Cleanup(func() { close(hold) }) // before srv.Close
	post := func(from string, n int, mayRefuse bool) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10) // reads nothing anyway
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("POST " + MessagesPath + " HTTP/1.1\r\nHost: agent\r\nContent-Type: " + ContentType +
			"\r\nContent-Length: " + strconv.Itoa(n) + "\r\n\r\n"))
		if _, err := c.Write(make([]byte, n)); err != nil && !mayRefuse {
			t.Fatal(err)
		}
		return c
	}
	for i := range 4 {
		from := "127.0.0." + strconv.Itoa(61+i)
		c := post(from, large, false)
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			t.Fatal("the handler was not called")
		}
		peer := transport.Peer(c.LocalAddr().String())
		for deadline := time.Now().Add(5 * time.Second); srv.adm.PeerBytes(peer) != large; {
			if time.Now().After(deadline) {
				t.Fatalf("peer %s: %d bytes charged, want its unread reply's %d", from, srv.adm.PeerBytes(peer), large)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// A fifth large body: refused once the large part is full (as it
	// should be), or admitted and held while the small one comes.
	// A refusal may come, and the connection close, before its body is
	// written whole (a broken pipe here is that refusal, read below).
	fifth := post("127.0.0.65", last, true)
	answered := make(chan struct{})
	go func() {
		var b [1]byte
		fifth.Read(b[:])
		close(answered)
	}()
	select {
	case <-returned:
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the fifth large body was neither handled nor refused")
	}
	c := post("127.0.0.66", small, false)
	line := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(c, line); err != nil {
		t.Fatal(err)
	}
	if string(line) != "HTTP/1.1 200" {
		t.Fatalf("a %d-byte message while large bodies and their replies hold %d of %d bytes: %q, want 200 (SmallReserve %d)",
			small, srv.adm.Bytes(), budget, line, transport.SmallReserve(budget))
	}
}

// TestWholeAnswerBoundFollowsTheMinimumDataRate: the whole write of an
// answer is bounded by its size at MinDataRate plus the grace, within
// the http.Server's WriteTimeout. Threat (a regression of the first mend
// of the inbound path): every answer was cut at 30 s whole, so a 16 MiB
// reply needed about 4.5 Mbit/s, and a site on a slow link could not
// let it through by lowering MinDataRate.
func TestWholeAnswerBoundFollowsTheMinimumDataRate(t *testing.T) {
	srv := NewServer(nil, 10*time.Minute, nil)
	for _, tc := range []struct {
		name string
		n    int64
		rate int64
		srv  *http.Server
		want time.Duration
	}{
		{"small, default rate", 1 << 10, 0, srv, admission.FrameGrace + 7812500*time.Nanosecond},
		{"16 MiB at 32 KiB/s, within the write timeout", 16 << 20, 32 << 10, srv, admission.FrameGrace + 512*time.Second},
		{"capped by the write timeout", 64 << 20, 32 << 10, srv, 10 * time.Minute},
		{"no server", 16 << 20, 32 << 10, nil, admission.FrameGrace + 512*time.Second},
	} {
		if got := answerBound(tc.n, tc.rate, 0, tc.srv); got != tc.want {
			t.Errorf("%s: the whole answer gets %v, want %v", tc.name, got, tc.want)
		}
	}
}
