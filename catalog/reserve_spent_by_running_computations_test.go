package catalog

import (
	"strconv"
	"testing"
	"time"
)

// TestLightPeerTakesTheReserveManyTimesAtOnce: attack on CATALOG-28. A
// peer is light while its bucket holds at least 15/16 of its burst, and
// its pages are charged only when they end, so a new address asked for
// its four page slots' worth of hostile pages at once (the renderings'
// peerRunning is MaxInFlight/PeerShare, four) once the total was down to
// the reserve: every one of them was admitted as light, since none was
// charged yet, and each charged what it took (a hostile version page is
// a quarter of a second of CPU, and four of them on two loaded cores a
// second of wall time each): four times the light allowance the reserve
// was sized for, so a few fresh addresses emptied it. Now a peer takes
// the reserve one computation at a time: one with a computation running
// is not light, since what that costs is not known until it ends
// (CATALOG-31).
func TestLightPeerTakesTheReserveManyTimesAtOnce(t *testing.T) {
	clock := &stepClock{t: testNow}
	// The handler's renderings at the defaults: a minute in all, 15 s
	// a peer, 16 pages at once and 4 a peer. The clock stands still,
	// so nothing refills.
	c := newComputeShare(renderKind, clock.Now, DefaultRenderBurst, DefaultRenderRate, DefaultMaxInFlight, DefaultPeerShare)
	// Four heavy peers spend the total down into the reserve (50 s of
	// the minute: 10 s left, under the reserve of 15 s).
	for i := range 4 {
		heavy := "192.0.2." + strconv.Itoa(i+1)
		if no := c.admit(heavy); no != nil {
			t.Fatalf("heavy peer %d refused its first page: %s", i, no.name)
		}
		c.charge(heavy, 12500*time.Millisecond)
	}
	const fresh = "203.0.113.9"
	admitted := 0
	for range DefaultMaxInFlight / DefaultPeerShare {
		if c.admit(fresh) == nil {
			admitted++
		}
	}
	if admitted > 1 {
		t.Errorf("a new peer had %d pages admitted at once into the reserve; want one at a time (each is charged only when it ends)", admitted)
	}
}

// TestHeavyPagesAdmittedAboveTheReserveSpendIt: attack on CATALOG-28.
// The reserve was looked at only when a computation was admitted, and a
// computation is charged only when it ends. Heavy peers (PeerShare of
// them, each with some of its share left) waited until the total was
// just above the reserve, then started together all the computations
// their shares let run: every one was admitted, since the total was
// above the reserve when each was looked at, and their charges then
// landed in the reserve, past it and into debt, so that every reader,
// new or light, was refused 503 until the total refilled: the reserve
// protected nothing. Now each computation running counts for its part
// of the reserve (reserve/maxRunning) when a heavy peer is admitted, so
// the ones running when the total comes down to the reserve take it
// only by what each costs beyond its part (CATALOG-31).
func TestHeavyPagesAdmittedAboveTheReserveSpendIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    shareKind
		running int
		// each is what one computation takes: a hostile matrix is
		// seconds of CPU (CATALOG-18); four hostile version pages a
		// peer on two loaded cores take a second of wall time each.
		each time.Duration
	}{
		{"matrices", compareKind, DefaultMaxComputing, 5 * time.Second},
		{"renderings", renderKind, DefaultMaxInFlight, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{t: testNow}
			c := newComputeShare(tc.kind, clock.Now, time.Minute, 1, tc.running, DefaultPeerShare)
			heavy := func(i int) string { return "192.0.2." + strconv.Itoa(i+1) }
			// Each heavy peer spends 11.2 s of its 15 s: 15.2 s of the
			// total are left, just above the reserve of 15 s.
			for i := range 4 {
				if no := c.admit(heavy(i)); no != nil {
					t.Fatalf("heavy peer %d refused its first computation: %s", i, no.name)
				}
				c.charge(heavy(i), 11200*time.Millisecond)
			}
			var started []string
			for i := range 4 {
				for range tc.running {
					if c.admit(heavy(i)) == nil {
						started = append(started, heavy(i))
					}
				}
			}
			for _, p := range started {
				c.charge(p, tc.each)
			}
			if no := c.admit("203.0.113.9"); no != nil {
				t.Errorf("%d computations of heavy peers admitted above the reserve spent it: a new reader is refused %d %s", len(started), no.status, no.name)
			}
		})
	}
}
