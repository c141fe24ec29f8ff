package ampstcp

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is a clock the test moves (ServerOptions.now).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestAPeerAbandoningTLSHandshakesIsRefusedPastItsRate: each TLS
// connection costs the server an ECDHE and a signature as soon as its
// ClientHello arrives, before the peer owes anything more; a peer that
// opens connections one after another and abandons each handshake stays
// within MaxPeerConns and HandshakeTimeout, yet made the server run a
// handshake for every one, at the peer's pace (measured on loopback,
// replaying one recorded ClientHello: 3,541 handshakes in 2 s from one
// connection at a time, about 0.5 ms of CPU each). A site now begins at
// most MaxPeerConns handshakes at once and PeerHandshakeRate a second
// after; one beyond is closed before its handshake (the server runs
// none), the /64s of one /48 share the site's bucket, and another caller
// is served. Counted: the handshakes the server began (GetCertificate
// runs once for each ClientHello), on the test's clock.
func TestAPeerAbandoningTLSHandshakesIsRefusedPastItsRate(t *testing.T) {
	cert, pool := selfSigned(t)
	var began atomic.Int64
	cfg := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		began.Add(1)
		return &cert, nil
	}}
	ln, err := listenRemoteAs()
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	const maxConns, rate = 32, 2 // a site: 8 handshakes at once, 2 a second after
	s := NewServer(echo(t, 0, nil), ServerOptions{MaxConns: maxConns, PeerHandshakeRate: rate, now: clock.now})
	go s.Serve(tls.NewListener(ln, cfg))
	t.Cleanup(func() { s.Close() })
	addr := ln.Addr().String()
	// abandon opens a TLS connection from the address from, runs the
	// handshake as far as the server takes it and leaves; it waits for
	// the server to drop the connection, so that MaxPeerConns never
	// refuses the next. It reports whether the handshake completed.
	abandon := func(from string) bool {
		t.Helper()
		raw, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		raw.SetDeadline(time.Now().Add(waitTimeout))
		tc := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		err = tc.Handshake()
		raw.Close()
		eventually(t, "the server still holds the abandoned connection", func() (bool, string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.conns) == 0, fmt.Sprintf("%d connections", len(s.conns))
		})
		return err == nil
	}
	burst := maxConns / 4
	for _, step := range []struct {
		name    string
		from    string
		advance time.Duration
		tries   int
		want    int // handshakes completed, each one the server began
	}{
		{"a site opens its share at once, then more", siteFrom[0], 0, 3 * burst, burst},
		{"another /64 of the same /48", siteFrom[1], 0, burst, 0},
		{"another caller", callerFrom, 0, 1, 1},
		{"one second later", siteFrom[2], time.Second, 3 * rate, rate},
		{"a clock that steps back refills nothing", siteFrom[3], -time.Hour, rate, 0},
	} {
		clock.advance(step.advance)
		before := began.Load()
		done := 0
		for range step.tries {
			if abandon(step.from) {
				done++
			}
		}
		if got := began.Load() - before; got != int64(step.want) || done != step.want {
			t.Errorf("%s: the server began %d handshakes of %d, %d completed; want %d", step.name, got, step.tries, done, step.want)
		}
	}
}

// TestHandshakeBucketsOfManySitesAreBounded: the buckets are kept per
// site, and sites are the peer's to choose (every IPv4 address, every
// /48): at most maxHandshakeSites are kept; a full bucket is forgotten
// when room is needed, and past the bound with none full a new site is
// refused rather than kept.
func TestHandshakeBucketsOfManySitesAreBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	b := handshakeBuckets{rate: 1, burst: 4, sites: map[string]handshakeBucket{}}
	for i := range maxHandshakeSites {
		if !b.take(fmt.Sprint("site", i), t0) {
			t.Fatalf("site %d refused its first handshake", i)
		}
	}
	if b.take("one more", t0) {
		t.Fatalf("a site past the %d kept was given a handshake with no bucket kept", maxHandshakeSites)
	}
	if !b.take("one more", t0.Add(time.Second)) {
		t.Fatal("a new site refused once every bucket was full again")
	}
	if len(b.sites) != 1 {
		t.Fatalf("%d buckets kept; want the new site's only", len(b.sites))
	}
}
