package admission

import (
	"context"
	"testing"
	"time"
)

// TestCallerWhoseMessageIsIdleIsNotHeldByAPeerPresentOnlyAway: with 8
// slots, the caller at 192.0.2.1 has one message waiting in its handler
// (Idle); a message of 2001:db8:9::/64 waits for that message's outcome
// (a copy of it, agent.claim; a stream's lock, agent.streams.lookup).
// Parked (Park), it kept its network active with nothing inside, and the
// caller's next Enter was refused 5003 slot_wait_ended when its context
// ended, with 8 of 8 slots free (docs/SPEC-DECISIONS.md AGENT-34). Away,
// it must not: the caller's next message gets a slot, given 1 s. The
// message away stays its network's through sweeps (3 lingers later),
// comes back counted inside, its network active again, and every count
// ends at zero.
func TestCallerWhoseMessageIsIdleIsNotHeldByAPeerPresentOnlyAway(t *testing.T) {
	const caller, other = "192.0.2.1", "2001:db8:9::/64"
	f := NewFair(8, 0)
	advance := steppedClock(f)
	c, cDone := enterCtx(t, f, caller)
	cBack := f.Idle(c) // its handler runs long
	o, oDone := enterCtx(t, f, other)
	oBack := f.Away(o) // it waits for the caller's message
	ctx, cancel := context.WithTimeout(WithPeer(context.Background(), caller), time.Second)
	_, done, err := f.Enter(ctx)
	cancel()
	if err != nil {
		f.mu.Lock()
		free := f.free
		f.mu.Unlock()
		t.Fatalf("the caller's next message, its one other message idle, a message of %s away: %v, with %d of 8 slots free", other, err, free)
	}
	done()
	advance(3 * FairLinger)
	f.mu.Lock()
	f.dispatch() // sweeps
	p := f.peers[Network(other)]
	f.mu.Unlock()
	if p == nil {
		t.Fatalf("the network of a message away was swept from the gate's table")
	}
	cBack()
	cDone()
	oBack()
	f.mu.Lock()
	inside, busy := p.inside, p.busy
	f.mu.Unlock()
	if inside != 1 || !busy || f.peers[Network(other)] != p {
		t.Fatalf("back from Away: %d inside its network, active %v; want 1, true", inside, busy)
	}
	oDone()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wake != nil {
		f.wake.Stop()
	}
	if f.free != 8 || f.inside != 0 || f.busy != 0 || p.away != 0 || p.parked != 0 {
		t.Fatalf("after every message: %d free, %d inside, %d busy, %d away, %d parked; want 8, 0, 0, 0, 0", f.free, f.inside, f.busy, p.away, p.parked)
	}
}
