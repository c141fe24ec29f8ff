package transport

import (
	"net"
	"testing"
	"time"
)

// TestOneSiteCannotTakeEveryListenerConnection: LimitListener (every
// HTTP server of the project: ampagent serve, the catalog, the mirror,
// the MCP bridge) keeps at most total connections open, at most perPeer
// of them from one peer, "so one host cannot take every connection a
// server accepts". Attack: one host holding an IPv6 /48 (one interface
// can use all of it) opens perPeer connections from each of
// total/perPeer of its /64s and sends nothing. Each /64 was a peer of
// its own: the host held every slot, Accept waited, and every other
// caller's connection waited in the kernel's backlog for as long as the
// host kept them. It holds one peer's share, as the agent's slots count
// it (a /48 is one peer: docs/SPEC-DECISIONS.md TRANSPORT-9,
// TRANSPORT-14), and another caller is still accepted.
func TestOneSiteCannotTakeEveryListenerConnection(t *testing.T) {
	raw, err := listenRemoteAs()
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(raw, 8, 2)
	defer l.Close()
	accepted := acceptAll(l)
	for _, from := range siteFrom {
		for range 2 {
			dialFrom(t, raw, from)
		}
	}
	time.Sleep(100 * time.Millisecond) // the site's connections are accepted, or refused
	dialFrom(t, raw, callerFrom)
	deadline := time.After(10 * time.Second) // generous: mended, the caller is accepted at once
	for {
		select {
		case c := <-accepted:
			if c.RemoteAddr().(*net.TCPAddr).IP.String() == callerAddr {
				return
			}
		case <-deadline:
			t.Fatalf("another caller was not accepted within 10 s (%d open): one /48 holds every connection from four of its /64s", l.Open())
		}
	}
}
