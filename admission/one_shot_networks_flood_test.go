package admission

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestOneShotNetworksSlowEveryDispatch: the attack is one message each
// from many networks (IPv6 /48s, IPv4 addresses), bad signatures that
// never verify and so can never make their network linger. Each network
// stays in the gate's table until a sweep after FairLinger, and every
// dispatch (two per message: Enter and done, under the gate's one lock)
// walked the whole table to count the active peers: after 2,048 such
// networks an honest message's admission cost about 77 µs under the lock
// instead of about 2 µs (36 times), and the gate, not the cores, bounded
// what the agent serves (TRANSPORT-16). What should happen: counting the
// active peers walks none of the peers that are not active. The clock is
// frozen, so the 2,048 networks all stay in the table; the bound (10
// times, plus 5 µs) leaves room for a loaded machine and is well below
// the 36 times of the walk.
func TestOneShotNetworksSlowEveryDispatch(t *testing.T) {
	cost := func(flood int) time.Duration {
		f := NewFair(8, 256)
		at := time.Unix(1_800_000_000, 0)
		f.now = func() time.Time { return at }
		for i := range flood {
			_, done, err := f.Enter(WithPeer(context.Background(), fmt.Sprintf("2001:db8:%x::/64", i)))
			if err != nil {
				t.Fatal(err)
			}
			done()
		}
		if f.busy != 0 || len(f.lingering) != 0 {
			t.Fatalf("after %d one-shot networks: %d counted busy, %d lingering, want none", flood, f.busy, len(f.lingering))
		}
		ctx := WithPeer(context.Background(), "192.0.2.1")
		best := time.Duration(1 << 62)
		for range 5 {
			start := time.Now()
			for range 200 {
				_, done, err := f.Enter(ctx)
				if err != nil {
					t.Fatal(err)
				}
				done()
			}
			best = min(best, time.Since(start)/200)
		}
		return best
	}
	base, flooded := cost(0), cost(2048)
	t.Logf("an honest message's Enter and done: %v alone, %v after 2,048 one-shot networks", base, flooded)
	if flooded > 10*base+5*time.Microsecond {
		t.Errorf("2,048 one-shot networks made each message's admission cost %v, %.0fx the %v it costs alone", flooded, float64(flooded)/float64(base), base)
	}
}
