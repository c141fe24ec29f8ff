package ledger

import (
	"testing"
	"time"
)

// Round 8 (docs/PERFORMANCE.md) and PERF-5 (docs/SPEC-DECISIONS.md): the
// count of writers a group commit expects soon holds the messages on their
// way to a ticket (Expect) and the tickets that compute outside their
// handler (Ticket.Handling), not only the tickets out of a handler.

// TestCallersWaitingForAProcessorCountAsExpectedWriters: at 256 callers
// on two processors most callers waited for a processing slot, before
// their ticket or between Running and their handler, and the count left
// them out: the count rule saw every expected writer queued and started
// groups of 13 records while about 190 writers were on their way. Each
// step of a message's way must move the count, and leave nothing behind.
func TestCallersWaitingForAProcessorCountAsExpectedWriters(t *testing.T) {
	c := newClock()
	l, _ := New(NewMemory(Limits{}), Options{Now: c.Now})
	want := func(step string, n int) {
		t.Helper()
		if got := l.Expected(); got != n {
			t.Fatalf("%s: %d writers expected, want %d", step, got, n)
		}
	}
	a1, a2 := l.Expect(), l.Expect()
	want("two messages received, waiting for a slot", 2)
	st, err := l.Start("did:key:zA", id(1), c.Now().Add(time.Hour))
	if err != nil || st.Ticket == nil {
		t.Fatal(st.State, err)
	}
	tk := st.Ticket
	a1.Done()
	want("one took its ticket", 2)
	a1.Done()
	want("Done twice", 2)
	a2.Done()
	want("the other was answered without a ticket", 1)
	if err := tk.Running(); err != nil {
		t.Fatal(err)
	}
	want("running, as Running leaves it: in its handler", 0)
	tk.Handling(false)
	want("running, waiting for a slot before its handler", 1)
	tk.Handling(true)
	tk.Handling(true)
	want("its handler runs (said twice)", 0)
	tk.Handling(false)
	want("its handler returned: encoding, signing, then Finish", 1)
	if err := tk.Finish([]byte("r")); err != nil {
		t.Fatal(err)
	}
	want("finished", 0)
	tk.Handling(true)
	want("Handling on an ended ticket", 0)

	st, _ = l.Start("did:key:zA", id(2), c.Now().Add(time.Hour))
	st.Ticket.Handling(true)
	want("Handling on a ticket that is not running", 1)
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	st.Ticket.Handling(true)
	st.Ticket.Abandon()
	want("a ticket abandoned in its handler", 0)
}

// TestGatherBacklogWaitingForAProcessorIsGathered: the state measured at a
// group's start at 256 callers (Round 8): 13 records queued, 20 tickets
// out of a handler, about 150 callers waiting for a slot to be verified and
// 35 tickets waiting for one after Running. Counted without the callers on
// their way, the group ran at once (the count rule), with 13 records; with
// them it gathers, and still no longer than its window.
func TestGatherBacklogWaitingForAProcessorIsGathered(t *testing.T) {
	p := gatherPolicy{cap: maxGather, procs: 2}
	t0 := time.Unix(1e9, 0)
	at := t0
	// A steady stream: a record every 50 µs, groups of 20 taking 400 µs.
	for i := 0; i < 400; i++ {
		if i%20 == 0 {
			p.started(at)
			p.flushed(400*time.Microsecond, at.Add(400*time.Microsecond), true)
		}
		p.arrived(at)
		at = at.Add(50 * time.Microsecond)
	}
	released := at.Add(-time.Millisecond)
	p.started(released.Add(-400 * time.Microsecond))
	p.flushed(400*time.Microsecond, released, true)
	oldest, now := released.Add(-200*time.Microsecond), at
	const queued, outOfHandler, waitingToEnter, waitingAfterRunning = 13, 20, 150, 35
	if d := p.wait(now, oldest, queued, outOfHandler); d != 0 {
		t.Fatalf("the old count (tickets out of a handler, %d): the group waits %v; this test no longer shows the case it guards", outOfHandler, d)
	}
	d := p.wait(now, oldest, queued, outOfHandler+waitingToEnter+waitingAfterRunning)
	if d <= 0 {
		t.Fatalf("%d writers on their way for a processor: the group of %d runs at once", waitingToEnter+waitingAfterRunning, queued)
	}
	if window := min(p.cap, gatherFlushes*p.flush); now.Add(d).After(later(oldest, p.released).Add(window)) {
		t.Fatalf("the group waits %v, past its window %v", d, window)
	}
}
