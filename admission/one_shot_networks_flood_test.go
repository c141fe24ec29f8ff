package admission

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// floodOneShotNetworks returns a gate on a frozen clock through which
// flood networks (IPv6 /48s) each sent one message and left: bad
// signatures that never verify, so none of them may linger.
func floodOneShotNetworks(tb testing.TB, flood int) *Fair {
	tb.Helper()
	f := NewFair(8, 256)
	at := time.Unix(1_800_000_000, 0)
	f.now = func() time.Time { return at }
	for i := range flood {
		_, done, err := f.Enter(WithPeer(context.Background(), fmt.Sprintf("2001:db8:%x::/64", i)))
		if err != nil {
			tb.Fatal(err)
		}
		done()
	}
	return f
}

// TestOneShotNetworksSlowEveryDispatch: the attack is one message each
// from many networks (IPv6 /48s, IPv4 addresses), bad signatures that
// never verify and so can never make their network linger. Each network
// stays in the gate's table until a sweep after FairLinger, and every
// dispatch (two per message: Enter and done, under the gate's one lock)
// walked the whole table to count the active peers: after 2,048 such
// networks an honest message's admission cost about 77 µs under the lock
// instead of about 2 µs (36 times), and the gate, not the cores, bounded
// what the agent serves (TRANSPORT-16). What should happen: counting the
// active peers walks none of the peers that are not active, so none of
// the 2,048 networks, kept in the table by the frozen clock, is among
// the busy or lingering peers the count walks, while an honest caller is
// admitted and counted. The cost is measured by
// BenchmarkEnterAfterOneShotNetworks, not here (no timed assertion).
func TestOneShotNetworksSlowEveryDispatch(t *testing.T) {
	f := floodOneShotNetworks(t, 2048)
	if len(f.peers) != 2048 {
		t.Fatalf("the frozen clock kept %d of 2,048 one-shot networks in the table; the test needs them all there", len(f.peers))
	}
	if f.busy != 0 || len(f.lingering) != 0 {
		t.Fatalf("after 2,048 one-shot networks: %d counted busy, %d lingering, want none walked", f.busy, len(f.lingering))
	}
	_, done, err := f.Enter(WithPeer(context.Background(), "192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	if f.busy != 1 || len(f.lingering) != 0 {
		t.Fatalf("an honest message inside: %d counted busy, %d lingering, want 1 and 0", f.busy, len(f.lingering))
	}
	done()
	if f.busy != 0 {
		t.Fatalf("after the honest message: %d counted busy, want 0", f.busy)
	}
}

// BenchmarkEnterAfterOneShotNetworks is an honest message's Enter and
// done alone and after 2,048 one-shot networks (TRANSPORT-16): the two
// should cost about the same.
func BenchmarkEnterAfterOneShotNetworks(b *testing.B) {
	for _, flood := range []int{0, 2048} {
		b.Run(fmt.Sprintf("networks=%d", flood), func(b *testing.B) {
			f := floodOneShotNetworks(b, flood)
			ctx := WithPeer(context.Background(), "192.0.2.1")
			b.ResetTimer()
			for range b.N {
				_, done, err := f.Enter(ctx)
				if err != nil {
					b.Fatal(err)
				}
				done()
			}
		})
	}
}
