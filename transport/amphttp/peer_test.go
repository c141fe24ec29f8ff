package amphttp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/transport"
)

// testServer is a server of the HTTP binding on loopback (NewServer's
// timeouts) with the admission its handler charges, so that a test can
// wait for the server to have decided on a request it sent.
type testServer struct {
	*httptest.Server
	adm *transport.Admission
}

// startServer serves h with opts until the test ends; the server is
// closed after the connections slowBody opened (cleanups run last
// first), so that Close does not wait for their read timeout.
func startServer(t *testing.T, h Handler, opts Options) *testServer {
	t.Helper()
	s := newServer(h, opts)
	srv := httptest.NewUnstartedServer(s.routes())
	srv.Config = NewServer(srv.Config.Handler, 0, nil)
	srv.Start()
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, adm: s.adm}
}

// slowBody opens a connection from the loopback address from and sends
// the head of a POST declaring n body bytes and one byte of the body, and
// returns once the server has decided on it: the n declared bytes charged
// to the peer's share (admitted), or an answer sent (refused; its first
// byte is read). Without the wait a request sent next by the same peer
// could be admitted first and the slow body refused in its place.
func slowBody(t *testing.T, srv *testServer, from string, n int) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	peer := transport.Peer(c.LocalAddr().String())
	before := srv.adm.PeerBytes(peer)
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\nx", MessagesPath, ContentType, n)
	for deadline := time.Now().Add(10 * time.Second); srv.adm.PeerBytes(peer) <= before; {
		c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		var b [1]byte
		if got, _ := c.Read(b[:]); got > 0 {
			break // refused: the answer came
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server neither admitted nor refused a slow body from %s within 10 s", from)
		}
	}
	c.SetReadDeadline(time.Time{})
	return c
}

// postFrom posts a small body from the loopback address from.
func postFrom(t *testing.T, srv *httptest.Server, from string) int {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Post(srv.URL+MessagesPath, ContentType, strings.NewReader("ping"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestOnePeerCannotHoldTheWholeBudget: a host that declares large bodies
// and sends nothing holds at most its peer's share of the in-flight bytes
// (threat: a few connections pinning the budget for everyone): beyond the
// share it gets 503, another host is still served; and each declared body
// gives its charge back once it is overdue at the minimum data rate.
// The grace (3 s) is the window in which the two slow bodies are held
// while the peer's next request is refused: with 300 ms a loaded machine
// could cut the first body before that request was judged (a 200, not a
// refusal of the share).
func TestOnePeerCannotHoldTheWholeBudget(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	opts := Options{MaxBody: 1 << 20, MaxInFlight: 64, MaxInFlightBytes: 8 << 20, MaxPeerInFlightBytes: 2 << 20,
		MinDataRate: 8 << 20, grace: 3 * time.Second}
	srv := startServer(t, h, opts)
	// Two declared 1 MiB bodies fill 127.0.0.10's share (2 MiB).
	slowBody(t, srv, "127.0.0.10", 1<<20-1)
	slowBody(t, srv, "127.0.0.10", 1<<20-1)
	if s := postFrom(t, srv.Server, "127.0.0.10"); s != http.StatusServiceUnavailable {
		t.Fatalf("a peer over its share: %d, want 503", s)
	}
	if s := postFrom(t, srv.Server, "127.0.0.11"); s != http.StatusOK {
		t.Fatalf("another peer: %d, want 200", s)
	}
	// 3 s of grace and 1/8 s for 1 MiB at 8 MiB/s: then the slow
	// bodies are cut off and their charge is back. Without the cut they
	// hold it for the server's read timeout: 20 s is a hang guard with
	// room for a loaded machine.
	deadline := time.Now().Add(20 * time.Second)
	for postFrom(t, srv.Server, "127.0.0.10") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the slow bodies still hold the peer's share 20 s on (grace 3 s)")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBodyOfMaxBodyIsServed: a body of exactly MaxBody is charged one byte
// more (to see a byte too many) and must still be served with nothing
// else in flight, when the caps are as small as MaxBody allows (found by
// review: the peer share of the defaults, 16 MiB, refused a 16 MiB body
// with 503 on every retry).
func TestBodyOfMaxBodyIsServed(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	for name, opts := range map[string]Options{
		"defaults":                {},
		"peer share = MaxBody":    {MaxBody: 1 << 20, MaxInFlightBytes: 4 << 20},
		"whole budget = MaxBody":  {MaxBody: 1 << 20, MaxInFlightBytes: 1 << 20},
		"explicit share below it": {MaxBody: 1 << 20, MaxInFlightBytes: 8 << 20, MaxPeerInFlightBytes: 1},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(NewHandler(h, opts))
			defer srv.Close()
			n := int(opts.MaxBody)
			if n == 0 {
				n = DefaultMaxBody
			}
			for _, length := range []int64{int64(n), -1} { // declared, then chunked
				req, _ := http.NewRequest(http.MethodPost, srv.URL+MessagesPath, strings.NewReader(strings.Repeat("x", n)))
				req.Header.Set("Content-Type", ContentType)
				req.ContentLength = length
				if length < 0 {
					req.Body = io.NopCloser(strings.NewReader(strings.Repeat("x", n)))
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("a body of MaxBody (%d bytes, length %d), nothing else in flight: %d", n, length, resp.StatusCode)
				}
			}
		})
	}
}

// TestOnePeerCannotHoldEveryRequestSlot: a host that opens requests and
// trickles their bodies holds at most its share of the request slots
// (threat: a handful of tiny, slow requests refusing everyone else with
// 503 for as long as the host renews them): beyond the share it gets 503,
// other hosts are still served. The minimum data rate is kept out of it
// (a minute of grace): with 2 s a loaded machine could cut the held
// bodies before the peer's next request was judged.
func TestOnePeerCannotHoldEveryRequestSlot(t *testing.T) {
	h := handlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return []byte{0xa0}, nil })
	opts := Options{MaxInFlight: 8, MaxPeerInFlight: 2, grace: time.Minute}
	srv := startServer(t, h, opts)
	for range 8 {
		slowBody(t, srv, "127.0.0.20", 100)
	}
	if s := postFrom(t, srv.Server, "127.0.0.20"); s != http.StatusServiceUnavailable {
		t.Fatalf("a peer holding its share of the slots: %d, want 503", s)
	}
	for _, other := range []string{"127.0.0.21", "127.0.0.22"} {
		if s := postFrom(t, srv.Server, other); s != http.StatusOK {
			t.Fatalf("another peer (%s): %d, want 200", other, s)
		}
	}
}
