package catalog

import (
	"strconv"
	"testing"
	"time"
)

// TestHeavyPeersDrainTheWholeBudget: the matrices' and the
// renderings' budgets (computeShare, CATALOG-18 and CATALOG-26) are
// shared by every peer, each limited to 1/PeerShare. Attack: PeerShare
// addresses (four IPv4 addresses, or four /64s of one site) each spend
// their share, in steps; together they spend the server's whole total,
// and every other reader, a new one or one that used almost nothing, was
// refused 503 until it refilled. Now the last quarter of the total is a
// reserve that a peer which used more than 1/16 of its share may not
// take (CATALOG-28): heavy peers are refused first (503, Retry-After
// until the total is above the reserve again), and light and new
// readers are still served from the reserve, none of them draining it
// alone.
func TestHeavyPeersDrainTheWholeBudget(t *testing.T) {
	clock := &stepClock{t: testNow}
	// 4 s in all, a second a peer, refilled at a millisecond every
	// second (nothing comes back within the test).
	c := newComputeShare(renderKind, clock.Now, 4*time.Second, 0.001, 16, 4)
	step := func(peer string, d time.Duration) *refusal {
		if no := c.admit(peer); no != nil {
			return no
		}
		c.charge(peer, d)
		return nil
	}
	const light = "198.51.100.7"
	if no := step(light, 10*time.Millisecond); no != nil {
		t.Fatalf("a reader's first page refused: %s", no.name)
	}
	for i := range 4 {
		heavy := "192.0.2." + strconv.Itoa(i+1)
		for range 100 {
			if step(heavy, 100*time.Millisecond) != nil {
				break
			}
		}
	}
	no := c.admit("192.0.2.4")
	if no == nil || no.retry < time.Second {
		t.Fatalf("a heavy peer is admitted into the reserve (refusal %+v), want a refusal with Retry-After", no)
	}
	for _, p := range []string{light, "203.0.113.9"} {
		if no := step(p, 100*time.Millisecond); no != nil {
			t.Errorf("peer %s, which used little or nothing, is refused (%s) once four heavy peers spent their shares", p, no.name)
		}
	}
	if no := c.admit("203.0.113.9"); no == nil {
		t.Errorf("a new peer that spent the reserve's allowance is admitted again: one peer drains the reserve")
	}
}
