package admission

import (
	"context"
	"testing"
	"time"
)

// TestBatchItemsCountAgainstTheirPeersShare: the attack: one address
// sends 4 BATCHes (of invocations whose params cost up to
// MaxValidationCost, seconds of CPU, to validate) while nobody else is
// busy: each container is admitted, alone, then waits for its items
// without a slot (the agent parks it: Park). A well-behaved caller at
// another address has one invocation inside. Now the containers start an
// item each.
//
// Before: an item was a nested waiter, granted without the Inside rule
// and not counted, so the address, its containers admitted, took every
// free slot for costly validations, and the caller's next message waited
// for one of them to end, for as long as the batches ran (up to the
// agent's MaxBatchDuration, 60 s by default). Measured through the agent
// (a 2-core machine, 6 batches of 6 items of half a second of CPU each):
// a busy caller's invocations took 1.1 s to 2.6 s each on average, one
// 10 s, against 0.1 s to 0.25 s under the same flood without BATCH.
//
// Now: each item counts against its peer's share as any message does
// (its container parked, uncounted), so the address gets the caller's
// count plus one, 2, and the caller's next message takes a free slot at
// once.
func TestBatchItemsCountAgainstTheirPeersShare(t *testing.T) {
	const attacker, caller = "192.0.2.2", "192.0.2.1"
	f := NewFair(6, DefaultPeerQueue)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return at }

	// The batches, admitted while their address is alone, each parked
	// while it waits for its items.
	var containers []context.Context
	var containerDone, containerBack []func()
	for range 4 {
		ctx, done := enterCtx(t, f, attacker)
		containerBack = append(containerBack, f.Park(ctx))
		containers = append(containers, ctx)
		containerDone = append(containerDone, done)
	}
	callerDone := enter(t, f, caller) // the caller's first message, inside

	// Each container starts an item.
	ictx, stopItems := context.WithCancel(context.Background())
	defer stopItems()
	var items []<-chan entered
	for _, c := range containers {
		cctx, cancel := context.WithCancel(c)
		context.AfterFunc(ictx, cancel)
		items = append(items, queued(f, cctx, attacker))
	}
	time.Sleep(50 * time.Millisecond) // the items are granted, or wait
	outcomes := make([]*entered, len(items))
	granted := 0
	for i, it := range items {
		select {
		case e := <-it:
			outcomes[i] = &e
			if e.err == nil {
				granted++
			}
		default:
		}
	}

	// The caller's next message.
	ctx, cancel := context.WithTimeout(WithPeer(context.Background(), caller), 200*time.Millisecond)
	defer cancel()
	_, nextDone, err := f.Enter(ctx)
	if err == nil {
		nextDone()
	}
	callerDone()
	if granted > 2 {
		t.Errorf("the address, its %d BATCHes admitted, took %d slots for their items against the caller's 1 message inside; want at most its share, the caller's count plus one: 2", len(containers), granted)
	}
	if err != nil {
		t.Errorf("the caller's second message waited 200 ms and was refused (%v) while the address took %d slots for its items; want a free slot at once", err, granted)
	}
	// Clean up: items still waiting give up; the granted ones end; the
	// containers take a slot back and end.
	stopItems()
	for i, it := range items {
		if outcomes[i] == nil {
			e := <-it
			outcomes[i] = &e
		}
		if outcomes[i].err == nil {
			outcomes[i].done()
		}
	}
	for i, done := range containerDone {
		containerBack[i]()
		done()
	}
	if f.free != 6 || f.inside != 0 {
		t.Fatalf("after every message: free %d, inside %d; want 6, 0", f.free, f.inside)
	}
}
