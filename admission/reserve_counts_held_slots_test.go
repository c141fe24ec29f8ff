package admission

import (
	"context"
	"testing"
	"time"
)

// TestReserveGivesTheLastSlotToACallerWhoseMessagesHoldNone:
// the attack: with 2 slots (GOMAXPROCS=1, the agent's 2 per core), a
// flooder keeps costly validations coming (one inside, computing for
// seconds; more waiting). An honest caller has one invocation in its
// handler (Idle: counted against its peer, holding no slot) and sends a
// cheap message (a PING, a status query), or has two invocations in their
// handlers and one of them comes back to write its result.
//
// Before: the Reserve rule (Fair.spare) asked whether the caller's peer
// had nothing inside, and p.inside counts the messages waiting in
// handlers, which hold no slot. So the last free slot was refused to the
// caller, and the flooder could not take it either: one slot stayed empty
// while the caller's message waited for the flooder's validation to end
// (seconds at MaxValidationCost), the very wait the reserve was made to
// end.
//
// Now: the reserve counts the slots a peer holds (inside less idle), not
// the messages it has waiting in handlers: a peer that holds no slot (its
// messages inside all wait without one: Idle) takes the last free slot at
// once.
func TestReserveGivesTheLastSlotToACallerWhoseMessagesHoldNone(t *testing.T) {
	const flooder, caller = "192.0.2.66", "198.51.100.7"
	for _, tc := range []struct {
		name string
		// handlers is how many of the caller's invocations wait in their
		// handlers (Idle) before the flood comes.
		handlers int
		// try is the caller's message that must find the free slot at
		// once (back: the resumes of those in their handlers): it reports
		// whether it did within 200 ms.
		try func(t *testing.T, f *Fair, back []func()) (ok bool, took func())
	}{
		{"a new message while one waits in its handler", 1, func(t *testing.T, f *Fair, back []func()) (bool, func()) {
			wctx, cancel := context.WithTimeout(WithPeer(context.Background(), caller), 200*time.Millisecond)
			defer cancel()
			_, done, err := f.Enter(wctx)
			if err != nil {
				return false, nil
			}
			done()
			return true, nil
		}},
		{"coming back from its handler while another waits in its own", 2, func(t *testing.T, f *Fair, back []func()) (bool, func()) {
			came := make(chan struct{})
			go func() { back[0](); close(came) }()
			select {
			case <-came:
				return true, func() {}
			case <-time.After(200 * time.Millisecond):
				// It takes its slot once the flood's message ends.
				return false, func() { <-came }
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFair(2, DefaultPeerQueue)
			// The caller's invocations in their handlers: counted, no slot.
			var back, dones []func()
			for range tc.handlers {
				h, hdone := enterCtx(t, f, caller)
				back = append(back, f.Idle(h))
				dones = append(dones, hdone)
			}
			// The flood: one costly validation inside, more waiting.
			fdone := enter(t, f, flooder)
			ctx, cancel := context.WithCancel(context.Background())
			var got []<-chan entered
			for range 4 {
				got = append(got, queued(f, ctx, flooder))
			}
			waitQueued(t, f, flooder, 4)
			time.Sleep(20 * time.Millisecond)
			if _, _, free := counts(f, flooder); free != 1 {
				t.Fatalf("setup: %d slots free, want 1", free)
			}
			ok, took := tc.try(t, f, back)
			cancel()
			fdone()
			drain(got)
			for i := range dones {
				if i == 0 && took != nil {
					took()
				} else {
					back[i]()
				}
				dones[i]()
			}
			if !ok {
				t.Fatalf("%s: a caller holding no slot waited 200 ms with the last slot free while a flooder held the other one (its messages waiting in handlers counted as holding slots); want the free slot at once", tc.name)
			}
		})
	}
}

// TestResumableSaysNotSoonWhileTheReserveHoldsTheMessage:
// the attack: a peer with one message computing (a costly validation,
// seconds) parks another for the local ledger's group commit (Park: its
// "running" record) while a second peer holds a slot. Fair.Resumable,
// which the agent asks to tell the ledger whether the parked message is a
// writer expected soon (invokeRun: ticket.Handling(false), counted by
// the group commit's gather), counted only the Inside share.
//
// Before: Resumable reported true, but the message could not take its
// slot back: the one free slot is the reserve (Fair.spare), kept for a
// peer that holds no slot, and it waited for the costly validation to
// end; the ledger meanwhile counted it as a writer coming soon and held
// its group commits for it (the stall the hint exists to prevent).
//
// Now: Resumable applies the Reserve rule as resumable does (spare): it
// reports false while the last free slot is kept from the message's peer.
func TestResumableSaysNotSoonWhileTheReserveHoldsTheMessage(t *testing.T) {
	const a, b = "192.0.2.66", "198.51.100.7"
	f := NewFair(3, DefaultPeerQueue)
	adone := enter(t, f, a) // computing, for seconds
	m, mdone := enterCtx(t, f, a)
	resume := f.Park(m) // its record made durable
	bdone := enter(t, f, b)
	_, _, free := counts(f, a)
	if free != 1 {
		t.Fatalf("setup: %d slots free, want 1", free)
	}
	soon := f.Resumable(m)
	back := make(chan struct{})
	go func() { resume(); close(back) }()
	came := false
	select {
	case <-back:
		came = true
	case <-time.After(200 * time.Millisecond):
	}
	adone()
	<-back
	mdone()
	bdone()
	if soon && !came {
		t.Fatalf("Resumable reported the parked message as coming back now, but it waited 200 ms for its slot (the last free one, kept by the Reserve rule until its peer's other message ended): the ledger counts it as a writer expected soon meanwhile")
	}
}
