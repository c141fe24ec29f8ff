package admission

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Review of Park (c4cb076): a message parked for the local ledger's
// group commit takes its slot back only while its peer is within its
// share (resumable), and its peer's messages that wait without a slot
// (Leave) count in that share. When those waiting messages wait for the
// parked one (a copy of a message waits for its first copy's outcome,
// agent.claim; a STREAM_END's second copy waits for the stream's lock
// the first holds while parked, streams.lookup), the share never frees.

// TestParkedFirstCopyIsNotHeldByTheCopiesWaitingForIt: an address sends
// a message three times (a client retrying on new connections). The
// first copy parks while its "running" record is written; the two
// copies after it are admitted and wait, without a slot, for its outcome
// (at review they waited with Leave and counted inside; the agent now
// parks them, and this test with it). Another address keeps one PING in flight,
// so its average is at most 1 and the address's share is at most 2
// inside: the two waiting copies fill it, the first copy's resume is
// held, its handler never starts and the copies wait until their
// callers give up (threat: a retried invocation stuck for as long as any
// other caller is busy; before Park, the first copy came back with
// Resume, never refused). Its resume must be granted within 2 s while
// the other address keeps its PINGs going.
func TestParkedFirstCopyIsNotHeldByTheCopiesWaitingForIt(t *testing.T) {
	const caller, other = "10.0.0.66", "10.0.0.7"
	f := NewFair(4, 0)
	advance := steppedClock(f)
	for range FairLingerBusy {
		enter(t, f, other)() // a busy PING caller
		advance(time.Millisecond)
	}
	otherDone := enter(t, f, other) // its PING in flight
	first, firstDone := enterCtx(t, f, caller)
	resume := f.Park(first) // its "running" record is being written
	var copies, copiesBack []func()
	for range 2 {
		c, done := enterCtx(t, f, caller)
		copies = append(copies, done)
		// It waits for the first copy's outcome, parked as the agent
		// parks it (agent.claim): with Leave, counted, the two copies
		// fill the share the first copy needs to come back.
		copiesBack = append(copiesBack, f.Park(c))
	}
	otherDone()
	back := make(chan struct{})
	go func() { resume(); close(back) }()
	defer func() {
		// On failure: the other address's linger ends, so the held
		// resume is granted and its goroutine ends.
		advance(time.Second)
		f.mu.Lock()
		f.dispatch()
		f.mu.Unlock()
		<-back
	}()
	// The other address keeps one PING in flight, 1 ms each.
	deadline := time.After(2 * time.Second)
	for held := true; held; {
		select {
		case <-back:
			held = false
		case <-deadline:
			t.Fatalf("the first copy's resume is held for 2 s by the two copies waiting for it (%d inside), while another address keeps one PING in flight", f.inside)
		default:
			enter(t, f, other)()
			advance(time.Millisecond)
			time.Sleep(time.Millisecond)
		}
	}
	// The first copy ran: its copies get its outcome and end.
	firstDone()
	for i, done := range copies {
		copiesBack[i]()
		done()
	}
	if f.free != 4 || f.inside != 0 {
		t.Fatalf("after every message: free %d, inside %d; want 4, 0", f.free, f.inside)
	}
}

// steppedClock gives f a clock that stands still at a fixed time, safe
// for concurrent use, until the returned advance moves it on.
func steppedClock(f *Fair) (advance func(time.Duration)) {
	tick := make(chan time.Time, 1)
	tick <- time.Unix(1000, 0)
	f.mu.Lock()
	f.now = func() time.Time { c := <-tick; tick <- c; return c }
	f.mu.Unlock()
	return func(d time.Duration) { c := <-tick; tick <- c.Add(d) }
}

// TestParkWithoutATicketIsLeave: a context that Enter did not return
// (an embedder's own goroutine) parks as Leave and resumes as Resume:
// the slot count comes back whole.
func TestParkWithoutATicketIsLeave(t *testing.T) {
	f := NewFair(2, 0)
	done := enter(t, f, "10.0.0.7")
	resume := f.Park(context.Background())
	if f.free != 2 {
		t.Fatalf("free %d after Park without a ticket, want 2", f.free)
	}
	resume()
	done()
	if f.free != 2 || f.inside != 0 {
		t.Fatalf("free %d, inside %d; want 2, 0", f.free, f.inside)
	}
}

// TestParkedBatchItemAndItsContainerEndClean: a BATCH item has a ticket
// of its own, and parks it, while its container is parked too (it waits
// for the item without a slot); after the item resumes and ends, and the
// container resumes and ends, the gate is clean: nothing inside, nothing
// parked, every slot free.
func TestParkedBatchItemAndItsContainerEndClean(t *testing.T) {
	f := NewFair(2, 0)
	container, containerDone := enterCtx(t, f, "10.0.0.7")
	containerBack := f.Park(container) // the container waits for its item
	item, itemDone, err := f.Enter(container)
	if err != nil {
		t.Fatal(err)
	}
	resume := f.Park(item)
	if in, parked, free := counts(f, "10.0.0.7"); in != 0 || parked != 2 || free != 2 {
		t.Fatalf("item parked: %d inside, %d parked, %d free; want 0, 2, 2", in, parked, free)
	}
	resume()
	itemDone()
	containerBack()
	containerDone()
	if in, parked, free := counts(f, "10.0.0.7"); in != 0 || parked != 0 || free != 2 || f.inside != 0 {
		t.Fatalf("after both: %d inside, %d parked, %d free, gate inside %d; want 0, 0, 2, 0", in, parked, free, f.inside)
	}
}

// heldResumes builds f with attackers addresses, each with inside
// messages in their handlers and held parked messages waiting to resume
// (above their share: honest lingering addresses with nothing inside
// lower the average), and honest busy addresses. It writes the peers'
// counts directly (2,048 held resumes without as many goroutines), so it
// also keeps the gate's running count of the active peers as Enter and
// forget keep it (TRANSPORT-16): written into the table alone, the
// attackers and the lingering honest addresses were counted by nobody,
// the honest message's Enter counted its own address alone active,
// and 3 held resumes took the free slots (a fixture that the running
// count did not know, not a change of the shares). It panics if the
// running count differs from a walk of the table.
func heldResumes(attackers, inside, held, honest int) *Fair {
	f := NewFair(4, 0)
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now } // the honest linger lasts
	for a := range attackers {
		p := &fairPeer{key: fmt.Sprintf("10.1.0.%d", a), inside: inside}
		f.peers[p.key] = p
		f.inside += inside
		p.busy = true // as its first Enter counts it
		f.busy++
		for range held {
			p.parked++
			p.back = append(p.back, fairResume{ready: make(chan struct{}), t: &fairTicket{peer: p, parked: 1}})
		}
		if held > 0 {
			f.parked = append(f.parked, p)
		}
	}
	for h := range honest {
		p := &fairPeer{key: fmt.Sprintf("10.2.0.%d", h), last: now}
		p.verified(now)
		p.cur = FairLingerBusy
		f.peers[p.key] = p
		f.forget(p) // its last message done: it lingers
	}
	if got, want := f.active(now), walkActive(f, now); got != want {
		panic(fmt.Sprintf("heldResumes: the gate counts %d active peers, its table holds %d", got, want))
	}
	return f
}

// BenchmarkEnterWithHeldParkedResumes: every dispatch (each Enter, done,
// Leave, Park) scans the held parked resumes under the gate's one lock,
// each asking allowed, which walks every peer: held x peers per dispatch
// (threat: an authorized key at 16 addresses (IPv6 /64s), 128
// invocations of a slow capability in flight at each, their "running"
// records written and their resumes held above their share, makes each
// message of every other caller pay 2048 x 32 peer walks under the lock
// at its Enter and at its done). One honest message's Enter and done,
// with 16 attacking and 16 honest addresses, with no held resume and with
// 128 per attacking address; compare ns/op.
func BenchmarkEnterWithHeldParkedResumes(b *testing.B) {
	for _, held := range []int{0, 128} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			f := heldResumes(16, 4, held, 16)
			ctx := WithPeer(context.Background(), "10.2.0.0")
			b.ResetTimer()
			for range b.N {
				_, done, err := f.Enter(ctx)
				if err != nil {
					b.Fatal(err)
				}
				done()
			}
			b.StopTimer()
			f.mu.Lock()
			n := 0
			for _, p := range f.parked {
				n += len(p.back)
			}
			if f.wake != nil {
				f.wake.Stop()
			}
			f.mu.Unlock()
			if n != 16*held {
				b.Fatalf("%d resumes held after the run, want %d (the attackers' stay above their share)", n, 16*held)
			}
		})
	}
}
