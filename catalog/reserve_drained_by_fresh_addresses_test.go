package catalog

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/transport"
)

// TestFreshSlash64sOfOneSiteDrainTheReserve: attack on CATALOG-28 and
// CATALOG-31. Once PeerShare heavy peers spent a budget down to its
// reserve, only light peers were admitted, and a peer never seen was
// light. A peer is an IPv6 /64 (transport.Peer), and one site holds
// 65,536 of them in its /48: each fresh /64 was admitted once as light
// and took a page's or a matrix's worth from the reserve, so one party
// emptied it with a few dozen of its addresses, and every other reader,
// new or light, was refused 503 until it refilled. Now a peer is light
// only while its network (admission.Network: the /48 of an IPv6 peer)
// is: the site's /64s together are one light peer of the reserve
// (CATALOG-32), and a reader from elsewhere is still served, an IPv4
// neighbour of a heavy address too (an IPv4 address is its own
// network: a /24 is often many unrelated hosts).
func TestFreshSlash64sOfOneSiteDrainTheReserve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    shareKind
		running int
		// each is what one computation of the site takes: a hostile
		// version page is about a second of wall time on a loaded
		// host, a hostile matrix seconds.
		each time.Duration
	}{
		{"renderings", renderKind, DefaultMaxInFlight, time.Second},
		{"matrices", compareKind, DefaultMaxComputing, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The defaults: a minute in all, 15 s a peer; the clock
			// stands still, so nothing refills.
			c := newComputeShare(tc.kind, (&stepClock{t: testNow}).Now, time.Minute, 1, tc.running, DefaultPeerShare)
			step := func(peer string, d time.Duration) *refusal {
				if no := c.admit(peer); no != nil {
					return no
				}
				c.charge(peer, d)
				return nil
			}
			// Four heavy peers spend the total down to the reserve
			// (12 s each: 12 s of the minute are left, under the
			// reserve of 15 s).
			for i := range 4 {
				if no := step("192.0.2."+strconv.Itoa(i+1), 12*time.Second); no != nil {
					t.Fatalf("heavy peer %d refused: %s", i, no.name)
				}
			}
			// One site's fresh /64s, one computation each.
			admitted := 0
			for i := range 64 {
				site := transport.Peer(fmt.Sprintf("[2001:db8:77:%x::1]:443", i))
				if step(site, tc.each) == nil {
					admitted++
				}
			}
			if admitted > 1 {
				t.Errorf("%d fresh /64s of one /48 admitted into the reserve, each as a new light peer; want the site's first alone", admitted)
			}
			for _, reader := range []string{
				"198.51.100.7",                         // elsewhere
				"192.0.2.200",                          // in the /24 of the heavy IPv4 peers
				transport.Peer("[2001:db8:78::1]:443"), // another site
			} {
				if no := step(reader, 10*time.Millisecond); no != nil {
					t.Errorf("reader %s refused %d %s once one site's fresh /64s took the reserve", reader, no.status, no.name)
				}
			}
		})
	}
}
