package amphttp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/transport"
)

// TestUnreadHTTPReplyDoesNotPinItsRequestsBytes: a peer posts a body of
// its whole byte share and then never reads the reply (larger than the
// socket buffers: loopback sends at most 4 MiB ahead, and the peer
// receives into 4 KiB). Threat: the request's bytes stayed charged to the
// peer's share and to the server's large-body budget, and its admission
// slot taken, until the answer was written — for the whole HTTP write
// timeout (90 s; ampagent's MaxTimeout + 30 s) — while the reply's bytes,
// which the server does hold, were charged nowhere: four hosts each
// pinned a quarter of MaxInFlightBytes for a minute and a half at no cost
// and every large POST of everyone else got 503. As on the TCP binding
// (TestUnreadRepliesDoNotPinTheirRequestsBytes), once the handler returns
// the request's charge and slot become the reply's charge, and the
// reply's write is bounded by the minimum data rate (transport.RateWriter),
// so that charge goes within moments too. The reply's charge is seen
// between the handler's return and that cut: the grace (3 s here) is that
// window, long enough for a loaded machine to look (with 300 ms a
// descheduled test saw the charge already gone).
func TestUnreadHTTPReplyDoesNotPinItsRequestsBytes(t *testing.T) {
	const (
		bodyLen  = 8 << 20
		replyLen = 6 << 20 // over loopback's 4 MiB send buffer, under the request
	)
	reply := bytes.Repeat([]byte{0x41}, replyLen)
	returned := make(chan struct{}, 1)
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		returned <- struct{}{}
		return reply, nil
	})
	// A grace far below the HTTP write timeout: the reply's write is cut
	// within seconds of the peer reading nothing (transport.RateWriter),
	// and its charge given back; until then the reply's charge is held,
	// for the test to see.
	opts := Options{MaxBody: bodyLen, MaxInFlightBytes: 64 << 20, MaxPeerInFlightBytes: bodyLen + 1, grace: 3 * time.Second}
	srv := startServer(t, h, opts)

	const from = "127.0.0.41"
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10) // the attacker reads nothing anyway
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", MessagesPath, ContentType, bodyLen)
	if _, err := c.Write(make([]byte, bodyLen)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-time.After(60 * time.Second): // 8 MiB through a -race build on a busy 2-core machine
		t.Fatal("the handler was not called")
	}
	peer := transport.Peer(c.LocalAddr().String())
	// The handler is done: within moments, what stays charged to the peer
	// is at most what the server still holds for it, the unread reply
	// (polled often: the state ends at the cut, a grace on).
	deadline := time.Now().Add(3 * time.Second)
	for srv.adm.PeerBytes(peer) > replyLen {
		if time.Now().After(deadline) {
			t.Fatalf("the handler returned 3 s ago and the peer has read none of its %d-byte reply: %d bytes of its request are still charged "+
				"(peer share %d; server %d of %d): an unread reply pins its request's bytes for the HTTP write timeout",
				replyLen, srv.adm.PeerBytes(peer), opts.MaxPeerInFlightBytes, srv.adm.Bytes(), opts.MaxInFlightBytes)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if srv.adm.PeerBytes(peer) == 0 && srv.adm.Bytes() == 0 {
		t.Fatal("the reply was charged nowhere while the server held it for a peer that reads nothing")
	}
	// And the reply's own charge goes once its write falls behind the
	// minimum data rate (the grace and a step), not after the server's
	// write timeout (90 s); 30 s leaves room for a loaded machine.
	deadline = time.Now().Add(30 * time.Second)
	for srv.adm.PeerBytes(peer) != 0 || srv.adm.Bytes() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a peer that reads nothing of its reply still has %d bytes charged (server %d) 30 s after its handler returned: "+
				"the reply's write is not bounded by the minimum data rate", srv.adm.PeerBytes(peer), srv.adm.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
