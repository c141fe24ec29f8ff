package admission

import (
	"context"
	"testing"
	"time"
)

// settleAt waits until peer has n messages inside or waiting in f, and
// a little longer, for any grant still on its way.
func settleAt(t *testing.T, f *Fair, peer string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		f.mu.Lock()
		k := 0
		if p := f.peers[Network(peer)]; p != nil {
			k = p.inside + p.waiting
		}
		f.mu.Unlock()
		if k == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d messages inside or waiting, want %d", peer, k, n)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
}

// TestBusyPeersLeaveTheLastSlotToAnIdlePeer: the Reserve rule. One
// address keeps costly messages in flight (params that take seconds to
// validate, within every per-message bound) while nobody else is busy;
// a sporadic caller's one cheap message must then find a slot at once,
// not wait for one of those validations to end (threat: 8 in flight from
// one address, momentarily alone, held all 4 slots, and the caller's
// call, 0.1 ms unloaded, waited 1.7 to 4.9 s). The same holds against
// two busy addresses together, and against an address's messages coming
// back from a wait without a slot (a handler: Idle; a durable write:
// Park) into the last free slot.
func TestBusyPeersLeaveTheLastSlotToAnIdlePeer(t *testing.T) {
	const a, b, caller = "192.0.2.66", "192.0.2.67", "198.51.100.7"
	for _, tc := range []struct {
		name string
		// busy fills f and returns what ends it.
		busy func(t *testing.T, f *Fair, ctx context.Context) (cleanup func())
	}{
		{"one peer alone, 8 in flight", func(t *testing.T, f *Fair, ctx context.Context) func() {
			var got []<-chan entered
			for range 8 {
				got = append(got, queued(f, ctx, a))
			}
			settleAt(t, f, a, 8)
			return func() { drain(got) }
		}},
		{"two busy peers together", func(t *testing.T, f *Fair, ctx context.Context) func() {
			// Each has one inside first: a peer with nothing inside may
			// take the last slot, and the first to come does.
			first := []func(){enter(t, f, a), enter(t, f, b)}
			var got []<-chan entered
			for range 7 {
				got = append(got, queued(f, ctx, a), queued(f, ctx, b))
			}
			settleAt(t, f, a, 8)
			settleAt(t, f, b, 8)
			return func() {
				drain(got)
				for _, done := range first {
					done()
				}
			}
		}},
		{"one coming back from its handler (Idle)", comingBack(a, (*Fair).Idle)},
		{"one coming back from a durable write (Park)", comingBack(a, (*Fair).Park)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFair(4, DefaultPeerQueue)
			ctx, cancel := context.WithCancel(context.Background())
			cleanup := tc.busy(t, f, ctx)
			wctx, wcancel := context.WithTimeout(WithPeer(context.Background(), caller), 200*time.Millisecond)
			_, done, err := f.Enter(wctx)
			wcancel()
			if err == nil {
				done()
			}
			cancel()
			cleanup()
			if err != nil {
				t.Fatalf("a caller with nothing inside waited 200 ms for a slot and gave up (%v); want the slot kept for it at once", err)
			}
		})
	}
}

// comingBack is a busy setup of TestBusyPeersLeaveTheLastSlotToAnIdlePeer:
// a message of peer waits without its slot (leave: Idle or Park) while 3
// more of the peer's take the slots but one, then comes back.
func comingBack(peer string, leave func(*Fair, context.Context) func()) func(*testing.T, *Fair, context.Context) func() {
	return func(t *testing.T, f *Fair, _ context.Context) func() {
		m, done := enterCtx(t, f, peer)
		resume := leave(f, m)
		var rest []func()
		for range 3 {
			rest = append(rest, enter(t, f, peer))
		}
		back := make(chan struct{})
		go func() { resume(); close(back) }()
		time.Sleep(50 * time.Millisecond)
		return func() {
			for _, d := range rest {
				d()
			}
			<-back
			done()
		}
	}
}

// TestOnePeerAloneStillUsesAllSlotsButOne: the reserve costs a peer alone
// one slot, no more: with 4 slots, 3 of its messages are inside at once;
// with 1 slot there is no reserve.
func TestOnePeerAloneStillUsesAllSlotsButOne(t *testing.T) {
	for _, tc := range []struct{ slots, want int }{{4, 3}, {2, 1}, {1, 1}} {
		f := NewFair(tc.slots, 0)
		ctx, cancel := context.WithCancel(context.Background())
		var got []<-chan entered
		for range 8 {
			got = append(got, queued(f, ctx, "192.0.2.66"))
		}
		settleAt(t, f, "192.0.2.66", 8)
		f.mu.Lock()
		inside := f.inside
		f.mu.Unlock()
		cancel()
		drain(got)
		if inside != tc.want {
			t.Errorf("%d slots: a peer alone has %d inside, want %d", tc.slots, inside, tc.want)
		}
	}
}
