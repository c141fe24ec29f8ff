package admission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// entered is the outcome of one Enter: its context and done function,
// or its error.
type entered struct {
	ctx  context.Context
	done func()
	err  error
}

// queued enters f for a message of peer in a goroutine; the outcome comes
// on the returned channel.
func queued(f *Fair, ctx context.Context, peer string) <-chan entered {
	got := make(chan entered, 1)
	go func() {
		ctx, done, err := f.Enter(WithPeer(ctx, peer))
		got <- entered{ctx, done, err}
	}()
	return got
}

// enter enters f for a message of peer, which must not wait, and which
// verifies (Verified).
func enter(t *testing.T, f *Fair, peer string) func() {
	t.Helper()
	_, done := enterCtx(t, f, peer)
	return done
}

// enterCtx is enter, returning the message's context too.
func enterCtx(t *testing.T, f *Fair, peer string) (context.Context, func()) {
	t.Helper()
	ctx, done, err := f.Enter(WithPeer(context.Background(), peer))
	if err != nil {
		t.Fatal(err)
	}
	f.Verified(ctx)
	return ctx, done
}

// waitQueued waits until peer has n messages waiting in f.
func waitQueued(t *testing.T, f *Fair, peer string, n int) {
	t.Helper()
	for {
		f.mu.Lock()
		k := 0
		if p := f.peers[Network(peer)]; p != nil && p.subs[peer] != nil {
			k = len(p.subs[peer].waiters)
		}
		f.mu.Unlock()
		if k == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFloodFromOnePeerCannotTakeAnotherPeersAdmission: one peer with 40
// messages waiting for the agent's processing slots (a flood of validly
// signed messages from fresh did:keys, or of bad signatures: the gate
// comes before verification, so both are the same to it) does not make
// another peer's messages wait behind all of them (threat: a valid
// caller on another host falling from 12,427 to 2,056 req/s under such a
// flood, since slots went first come first served). With one slot, the
// grants alternate between the two peers while both have messages
// waiting: the caller's 5 messages get 5 of the first 10 slots, not
// slots 41 to 45.
func TestFloodFromOnePeerCannotTakeAnotherPeersAdmission(t *testing.T) {
	f := NewFair(1, 0)
	ctx := context.Background()
	holder := enter(t, f, "10.0.0.66") // the slot is busy
	type entry struct {
		peer string
		got  <-chan entered
	}
	var order []entry
	for i := 0; i < 40; i++ {
		order = append(order, entry{"10.0.0.66", queued(f, ctx, "10.0.0.66")})
		waitQueued(t, f, "10.0.0.66", i+1)
	}
	for i := 0; i < 5; i++ {
		order = append(order, entry{"10.0.0.7", queued(f, ctx, "10.0.0.7")})
		waitQueued(t, f, "10.0.0.7", i+1)
	}
	var grants []string
	for len(grants) < len(order) {
		holder()
		// Exactly one waiter holds the slot now: find it.
		found := -1
		for found < 0 {
			for i, e := range order {
				if e.got == nil {
					continue
				}
				select {
				case r := <-e.got:
					if r.err != nil {
						t.Fatal(r.err)
					}
					found, holder = i, r.done
				default:
				}
				if found >= 0 {
					break
				}
			}
		}
		grants = append(grants, order[found].peer)
		order[found].got = nil
	}
	holder()
	caller := 0
	for i, p := range grants[:10] {
		if p == "10.0.0.7" {
			caller++
			if want := 2*caller - 1; i != want && i != want-1 {
				t.Errorf("the caller's message %d got slot %d, want %d or %d", caller, i, want-1, want)
			}
		}
	}
	if caller != 5 {
		t.Fatalf("the caller got %d of the first 10 slots, want 5 (grants: %v)", caller, grants)
	}
	if f.free != 1 || f.inside != 0 || settled(f) != 0 {
		t.Fatalf("after every message: free %d, inside %d, peers %d; want 1, 0, 0", f.free, f.inside, settled(f))
	}
}

// settled is how many peers f keeps once their linger is over.
func settled(f *Fair) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	later := time.Now().Add(2 * FairLinger)
	f.now = func() time.Time { return later }
	f.swept = time.Time{}
	f.sweep()
	return len(f.peers)
}

// TestFloodCannotKeepMoreMessagesInsideThanOthers: messages that gave
// their slot back to wait (for the ledger's group commit, a handler) still
// count against their peer, so a flooder cannot fill the agent with
// messages while a caller's few wait their turn on the way back (threat:
// throughput shared in proportion to what each peer has in flight, 128
// for a flooder against a caller's 16, once the slots are not what
// everyone waits for). With 4 slots and the caller holding 2 messages
// inside, the flooder gets no more than 3 inside however many slots are
// free; once the caller is answered, the flooder gets no more than one
// while the caller lingers (its next message may be on the way), and the
// rest once the caller is gone. The caller had FairLingerBusy messages
// admitted before: a busy caller.
func TestFloodCannotKeepMoreMessagesInsideThanOthers(t *testing.T) {
	f := NewFair(4, 0)
	clock := time.Unix(1000, 0)
	f.now = func() time.Time { return clock }
	ctx := context.Background()
	// The caller keeps messages coming (its linger counts).
	for range FairLingerBusy {
		enter(t, f, "10.0.0.7")()
	}
	var callerDone []func()
	for range 2 {
		callerDone = append(callerDone, enter(t, f, "10.0.0.7"))
		f.Leave() // waiting for the disk, without a slot
	}
	var flood []<-chan entered
	for i := 0; i < 10; i++ {
		flood = append(flood, queued(f, ctx, "10.0.0.66"))
	}
	var inside []func()
	for len(inside) < 3 {
		for i, c := range flood {
			if c == nil {
				continue
			}
			select {
			case r := <-c:
				inside = append(inside, r.done)
				flood[i] = nil
				f.Leave() // the flood's messages wait for the disk too
			default:
			}
		}
	}
	waitQueued(t, f, "10.0.0.66", 7)
	f.mu.Lock()
	free, n := f.free, f.peers["10.0.0.66"].inside
	f.mu.Unlock()
	if n != 3 || free != 4 {
		t.Fatalf("the flood has %d messages inside with %d slots free; want 3 inside, 7 waiting, all 4 slots free", n, free)
	}
	for _, d := range callerDone {
		f.Resume()
		d()
	}
	// The caller lingers with nothing inside: the flood's 3 finish, and it
	// gets one at a time.
	for _, d := range inside {
		f.Resume()
		d()
	}
	waitQueued(t, f, "10.0.0.66", 6)
	// Once the caller's linger is over, at the next event, the flood is
	// alone and takes the free slots but one (the Reserve rule): 2.
	clock = clock.Add(FairLinger)
	f.mu.Lock()
	f.dispatch()
	f.mu.Unlock()
	waitQueued(t, f, "10.0.0.66", 4)
}

// TestLingeringPeerDoesNotThrottleABusyCaller: a peer that sends one
// message now and then does not throttle a busy caller while it
// lingers, just answered, with nothing inside and nothing waiting
// (threat: an address sending one cheap message, a bad signature, every
// 50-90 ms counted as active for 100 ms after each answer, and a busy
// caller then got a new slot only while it had fewer than 0 + 1 messages
// inside: cut to 16-79 % of its throughput alone for about 1 KB/s of
// attack). The clock stands still, inside the idle peer's linger; the
// caller's 4 messages all get one of the 4 slots. A peer that had
// FairLingerBusy messages admitted still counts while it lingers
// (TestFloodCannotKeepMoreMessagesInsideThanOthers).
func TestLingeringPeerDoesNotThrottleABusyCaller(t *testing.T) {
	f := NewFair(5, 0) // 4 for the caller, 1 kept (the Reserve rule)
	clock := time.Unix(1000, 0)
	f.now = func() time.Time { return clock }
	for range FairLingerBusy - 1 {
		enter(t, f, "10.0.0.66")()
	}
	var got []<-chan entered
	for range 4 {
		got = append(got, queued(f, context.Background(), "10.0.0.7"))
	}
	// Every message of the caller is either inside or waiting.
	for {
		f.mu.Lock()
		k := 0
		if p := f.peers["10.0.0.7"]; p != nil {
			k = p.inside + p.waiting
		}
		f.mu.Unlock()
		if k == 4 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f.mu.Lock()
	inside, lingering := f.peers["10.0.0.7"].inside, f.peers["10.0.0.66"] != nil
	f.mu.Unlock()
	if !lingering {
		t.Fatal("the idle peer does not linger: the test tests nothing")
	}
	if inside != 4 {
		t.Fatalf("the caller has %d of its 4 messages inside with 5 slots while an idle peer lingers; want 4", inside)
	}
	for _, c := range got {
		(<-c).done()
	}
	if f.free != 5 || f.inside != 0 {
		t.Fatalf("after every message: free %d, inside %d; want 5, 0", f.free, f.inside)
	}
}

// TestPeerOverItsQueueIsRefusedRetryably: one peer cannot queue without
// bound for the processing slots (threat: a flooding host holding an
// unbounded number of messages, and their memory, in the queue): past its
// bound, its next message is refused at once with 5004 peer_busy
// (retryable), while another peer still queues, and callers in the same
// process ("" peer) are never refused.
func TestPeerOverItsQueueIsRefusedRetryably(t *testing.T) {
	f := NewFair(1, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := enter(t, f, "a")
	var waiting []<-chan entered
	for i := 0; i < 3; i++ {
		waiting = append(waiting, queued(f, ctx, "a"))
		waitQueued(t, f, "a", i+1)
	}
	_, _, err := f.Enter(WithPeer(ctx, "a"))
	if amp.CodeOf(err) != amp.CodeOverloaded || amp.NameOf(err) != ErrPeerBusy || !amp.CodeOf(err).Retryable() {
		t.Fatalf("a message over its peer's queue: %v, want 5004 %s (retryable)", err, ErrPeerBusy)
	}
	waiting = append(waiting, queued(f, ctx, "b"))
	waitQueued(t, f, "b", 1)
	for i := 0; i < 5; i++ {
		waiting = append(waiting, queued(f, ctx, ""))
		waitQueued(t, f, "", i+1)
	}
	holder()
	for range waiting {
		// One of them holds the slot: take it and pass it on.
		var r entered
		for r.done == nil {
			for i, w := range waiting {
				if w == nil {
					continue
				}
				select {
				case r = <-w:
					if r.err != nil {
						t.Fatal(r.err)
					}
					waiting[i] = nil
				default:
				}
				if r.done != nil {
					break
				}
			}
		}
		r.done()
	}
}

// TestMessageGivingUpLeavesTheQueue: a message whose context ends while
// it waits (its caller went away) leaves its peer's queue and holds
// nothing (threat: abandoned requests filling a peer's queue, or a slot
// granted to nobody being lost for good).
func TestMessageGivingUpLeavesTheQueue(t *testing.T) {
	f := NewFair(1, 1)
	holder := enter(t, f, "a")
	ctx, cancel := context.WithCancel(context.Background())
	got := queued(f, ctx, "a")
	waitQueued(t, f, "a", 1)
	cancel()
	if r := <-got; amp.CodeOf(r.err) != amp.CodeTimeout || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a message given up: %v, want 2004 wrapping context.Canceled", r.err)
	}
	// Its place is free again, and the slot goes round.
	next := queued(f, context.Background(), "a")
	waitQueued(t, f, "a", 1)
	holder()
	r := <-next
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.done()
	if f.free != 1 || len(f.ring) != 0 || settled(f) != 0 || f.inside != 0 {
		t.Fatalf("after all left: free %d, ring %d, peers %d, inside %d", f.free, len(f.ring), settled(f), f.inside)
	}
}

// TestResumedWorkGoesBeforeNewMessages: a goroutine that gave its slot
// back to wait for the disk gets one before any new message (threat:
// admitted work, which holds a ledger claim and a connection, starved
// by a flood of new messages from its own or another peer).
func TestResumedWorkGoesBeforeNewMessages(t *testing.T) {
	f := NewFair(1, 0)
	ctx := context.Background()
	first := enter(t, f, "a")
	fresh := queued(f, ctx, "b")
	waitQueued(t, f, "b", 1)
	// first waits for the disk: its slot goes to b, and first resumes after.
	f.Leave()
	r := <-fresh
	resumed := make(chan struct{})
	go func() { f.Resume(); close(resumed) }()
	for {
		f.mu.Lock()
		n := len(f.resume)
		f.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	newer := queued(f, ctx, "c")
	waitQueued(t, f, "c", 1)
	r.done()
	<-resumed
	select {
	case <-newer:
		t.Fatal("a new message took the slot before the resumed work")
	default:
	}
	first()
	if r := <-newer; r.err != nil {
		t.Fatal(r.err)
	} else {
		r.done()
	}
}

// TestBatchItemCountsWhileItsContainerParks: a message entered with the
// context Enter returned (a BATCH item, handled while its container is
// parked) counts against its peer as any message, and its container,
// parked, does not, so that a peer's containers cannot block their own
// items (threat: a caller's batches deadlocked by its own share while
// another peer is active) nor let them skip its share
// (TestBatchItemsCountAgainstTheirPeersShare).
func TestBatchItemCountsWhileItsContainerParks(t *testing.T) {
	f := NewFair(2, 0)
	other := enter(t, f, "b")
	f.Leave()
	ctx, container, err := f.Enter(WithPeer(context.Background(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	resume := f.Park(ctx)
	// The item takes a slot, and a counts 1 inside: the item.
	_, item, err := f.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in, parked, _ := counts(f, "a"); in != 1 || parked != 1 {
		t.Fatalf("a has %d inside, %d parked; want 1, 1", in, parked)
	}
	item()
	resume()
	container()
	f.Resume()
	other()
	if f.free != 2 || f.inside != 0 || settled(f) != 0 {
		t.Fatalf("after all left: free %d, inside %d, peers %d", f.free, f.inside, settled(f))
	}
}

// TestPeerOfNamesTheTransportsPeer: the peer a binding names is the one
// the gate sees; a context without one is the process's own.
func TestPeerOfNamesTheTransportsPeer(t *testing.T) {
	if p := PeerOf(context.Background()); p != "" {
		t.Fatalf("no peer: %q", p)
	}
	if p := PeerOf(WithPeer(context.Background(), "10.1.2.3")); p != "10.1.2.3" {
		t.Fatalf("peer %q", p)
	}
}

// TestBadSignaturesNeverMakeTheirPeerLinger: a peer whose messages fail
// verification does not linger after them however many it sent, so that
// bursts of bad signatures cannot hold a busy caller to one message
// inside (threat: 16 bad signatures every 100 ms, counted as a busy
// caller's messages, made the flooder "active" for the whole window with
// nothing inside: every other caller then got a new slot only while it
// had fewer than 0 + 1 messages inside). The clock stands still; the
// caller's 4 messages all get one of the 5 slots (1 kept: the Reserve
// rule).
func TestBadSignaturesNeverMakeTheirPeerLinger(t *testing.T) {
	f := NewFair(5, 0)
	clock := time.Unix(1000, 0)
	f.now = func() time.Time { return clock }
	for range 4 * FairLingerBusy {
		_, done, err := f.Enter(WithPeer(context.Background(), "10.0.0.66"))
		if err != nil {
			t.Fatal(err)
		}
		done() // refused unverified: no Verified
	}
	var got []<-chan entered
	for range 4 {
		got = append(got, queued(f, context.Background(), "10.0.0.7"))
	}
	for _, c := range got {
		select {
		case r := <-c:
			defer r.done()
		case <-time.After(10 * time.Second):
			t.Fatal("a caller's message waits for a free slot while the peer of bad signatures lingers")
		}
	}
}

// counts is what peer has inside and parked in f, and f's free slots.
func counts(f *Fair, peer string) (inside, parked, free int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.peers[peer]; p != nil {
		inside, parked = p.inside, p.parked
	}
	return inside, parked, f.free
}

// TestParkedWritesDoNotHoldTheirCallerToAComputingFlood: messages parked
// while their record is made durable (Park: the local ledger's group
// commit) do not count against their peer, so a durable caller competes
// with a flood on what it computes, not on its writes in flight (threat:
// a flood of bad signatures, which only computes, has 2 messages inside;
// counted, a durable caller's writes in flight held it to 3 messages at
// once, about 18 % of its rate alone). With 4 slots, the flood holding 2
// and 10 more waiting, the caller gets 6 messages admitted and parked,
// and the flood no third slot while the caller is active.
func TestParkedWritesDoNotHoldTheirCallerToAComputingFlood(t *testing.T) {
	f := NewFair(4, 0)
	ctx := context.Background()
	first, firstDone := enterCtx(t, f, "10.0.0.7") // the caller is active
	var flood []func()
	for range 2 {
		flood = append(flood, enter(t, f, "10.0.0.66"))
	}
	var waiting []<-chan entered
	for range 10 {
		waiting = append(waiting, queued(f, ctx, "10.0.0.66"))
	}
	waitQueued(t, f, "10.0.0.66", 10)
	resumes := []func(){f.Park(first)}
	callerDone := []func(){firstDone}
	for range 5 {
		c, done := enterCtx(t, f, "10.0.0.7")
		resumes = append(resumes, f.Park(c))
		callerDone = append(callerDone, done)
	}
	if in, parked, free := counts(f, "10.0.0.7"); in != 0 || parked != 6 || free != 2 {
		t.Fatalf("the caller has %d inside and %d parked, %d slots free; want 0, 6, 2", in, parked, free)
	}
	if in, _, _ := counts(f, "10.0.0.66"); in != 2 {
		t.Fatalf("the flood has %d inside while the caller's writes are parked; want 2", in)
	}
	for i, r := range resumes {
		r()
		callerDone[i]()
	}
	for _, d := range flood {
		d()
	}
	drain(waiting)
	for {
		if _, _, free := counts(f, ""); free == 4 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestParkedPeerStaysUntilItsMessagesResume: a peer whose only messages
// are parked is not swept away meanwhile (its count would be restored on
// a peer the gate no longer knows), and the gate ends clean.
func TestParkedPeerStaysUntilItsMessagesResume(t *testing.T) {
	f := NewFair(4, 0)
	c, done := enterCtx(t, f, "10.0.0.7")
	resume := f.Park(c)
	f.mu.Lock()
	now := f.now
	later := time.Now().Add(2 * FairLinger)
	f.now = func() time.Time { return later }
	f.sweep()
	n := len(f.peers)
	f.now, f.swept = now, time.Time{}
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d peers kept while one's message is parked, want 1", n)
	}
	resume()
	done()
	if f.free != 4 || f.inside != 0 || settled(f) != 0 {
		t.Fatalf("after it resumed and ended: free %d, inside %d, peers %d; want 4, 0, 0", f.free, f.inside, settled(f))
	}
}

// TestParkedMessagesComeBackOnlyWithinTheirPeersShare: a parked message
// counts again from its resume, so it resumes only while its peer may
// have one more message inside (threat: a flood of slow invocations,
// admitted without count while its "running" records were made durable,
// came back into 128 handlers at once against a PING caller's 8). With a
// caller holding 2 messages inside (a handler each: Leave), the flood
// parks 6 and gets 3 of them back (2 + 1) with 5 slots free; a message
// resuming after Leave is not held behind them; the rest come back as
// the flood's share allows once the caller is gone.
func TestParkedMessagesComeBackOnlyWithinTheirPeersShare(t *testing.T) {
	f := NewFair(8, 0)
	clock := time.Unix(1000, 0)
	f.now = func() time.Time { return clock }
	for range FairLingerBusy {
		enter(t, f, "10.0.0.7")() // a busy caller
	}
	var callerDone []func()
	for range 2 {
		callerDone = append(callerDone, enter(t, f, "10.0.0.7"))
		f.Leave() // in its handler
	}
	back := make(chan func(), 6)
	var comeBack []func()
	for range 6 {
		c, done := enterCtx(t, f, "10.0.0.66")
		resume := f.Park(c)
		comeBack = append(comeBack, func() { resume(); back <- done })
	}
	for _, c := range comeBack {
		go c()
	}
	var inside []func()
	for len(inside) < 3 {
		inside = append(inside, <-back)
	}
	for {
		f.mu.Lock()
		n := len(f.peers["10.0.0.66"].back)
		f.mu.Unlock()
		if n == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-back:
		t.Fatal("a fourth parked message of the flood came back against the caller's 2 inside")
	case <-time.After(20 * time.Millisecond):
	}
	if in, parked, free := counts(f, "10.0.0.66"); in != 3 || parked != 3 || free != 5 {
		t.Fatalf("the flood has %d inside and %d parked, %d slots free; want 3, 3, 5", in, parked, free)
	}
	// The caller's handlers return: not held behind the parked flood.
	for _, d := range callerDone {
		f.Resume()
		d()
	}
	// Once the caller's linger is over, the flood is alone.
	clock = clock.Add(2 * FairLinger)
	f.mu.Lock()
	f.dispatch()
	f.mu.Unlock()
	for len(inside) < 6 {
		inside = append(inside, <-back)
	}
	for _, d := range inside {
		d()
	}
	if f.free != 8 || f.inside != 0 || settled(f) != 0 {
		t.Fatalf("after every message: free %d, inside %d, peers %d; want 8, 0, 0", f.free, f.inside, settled(f))
	}
}
