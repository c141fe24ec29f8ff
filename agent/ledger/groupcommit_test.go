package ledger

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recordingCommitter is a groupCommit over ints whose groups are
// recorded.
type recordingCommitter struct {
	g      *groupCommit[int]
	mu     sync.Mutex
	groups [][]int
}

func newRecordingCommitter(active func() int, gather time.Duration) *recordingCommitter {
	r := &recordingCommitter{}
	r.g = newGroupCommit(func(q []int) int { return len(q) }, func(group []int) {
		r.mu.Lock()
		r.groups = append(r.groups, append([]int(nil), group...))
		r.mu.Unlock()
	})
	r.g.active, r.g.policy.cap = active, gather
	return r
}

func (r *recordingCommitter) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n []int
	for _, g := range r.groups {
		n = append(n, len(g))
	}
	return n
}

// queued is how many ops wait in the committer's queue.
func (r *recordingCommitter) queued() int {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	return len(r.g.queue)
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// steady is a policy that has seen arrivals every gap and groups that
// took flush to run, the latest arrival at last, with the cap maxGather.
func steady(gap, flush time.Duration, last time.Time) gatherPolicy {
	return steadyCapped(maxGather, gap, flush, last)
}

// steadyCapped is steady with another cap.
func steadyCapped(limit, gap, flush time.Duration, last time.Time) gatherPolicy {
	p := gatherPolicy{cap: limit, procs: 2}
	for i := 0; i < 64; i++ {
		p.flushed(flush, time.Time{}, true)
	}
	for i := 64; i >= 0; i-- {
		p.arrived(last.Add(-time.Duration(i) * gap))
	}
	return p
}

// TestGatherLoneCallerNeverWaits: a caller with nobody else on the way
// pays no latency for gathering: nothing measured yet, no other writer
// expected, or the first arrival after the stream went quiet (a burst
// that ended must not make it wait for company).
func TestGatherLoneCallerNeverWaits(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	afterQuiet := steady(10*time.Microsecond, 200*time.Microsecond, t0)
	afterQuiet.arrived(t0.Add(time.Second))
	slowTrickle := steady(5*time.Millisecond, 200*time.Microsecond, t0)
	oneByOne := steady(10*time.Microsecond, 2*time.Microsecond, t0)
	oneByOne.flushed(2*time.Microsecond, time.Time{}, false)
	for _, c := range []struct {
		name     string
		p        gatherPolicy
		now      time.Time
		expected int
	}{
		{"nothing measured", gatherPolicy{cap: maxGather}, t0, -1},
		{"nothing measured, writers expected", gatherPolicy{cap: maxGather}, t0, 50},
		{"the only writer expected", steady(10*time.Microsecond, 200*time.Microsecond, t0), t0, 1},
		{"first arrival after a quiet second", afterQuiet, t0.Add(time.Second), -1},
		{"arrivals sparser than the window", slowTrickle, t0, -1},
		{"one caller in a loop", oneByOne, t0, -1},
	} {
		if d := c.p.wait(c.now, c.now, 1, c.expected); d != 0 {
			t.Errorf("%s: a lone caller waits %v", c.name, d)
		}
	}
}

// TestGatherBurstIsGathered: while writers arrive faster than a group
// syncs, a new group waits for them (several flushes' worth, within the
// cap), and no longer than the expected writers need to arrive.
func TestGatherBurstIsGathered(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	gap, flush := 10*time.Microsecond, 150*time.Microsecond
	p := steady(gap, flush, t0)
	// The oldest op arrived one gap ago; the stream goes on.
	d := p.wait(t0, t0.Add(-gap), 2, -1)
	if want := gatherFlushes*flush - gap; d > want || d < stallGaps*gap-gap {
		t.Fatalf("a burst waits %v; want up to %v, at least until a stall", d, want)
	}
	// Arrivals go on: the group keeps waiting until its window is up.
	for i := 1; i <= 100; i++ {
		now := t0.Add(time.Duration(i) * gap)
		p.arrived(now)
		d := p.wait(now, t0.Add(-gap), 2+i, -1)
		if window := gatherFlushes*flush - gap - time.Duration(i)*gap; window > 0 && d == 0 {
			t.Fatalf("after %d arrivals the burst stopped gathering %v before its window", i, window)
		}
		if now.Add(d).After(t0.Add(gatherFlushes * flush)) {
			t.Fatalf("after %d arrivals the group would wait past its window (%v)", i, d)
		}
	}
	// With writers expected beyond those that keep the processors busy,
	// it waits; once only those are left, it runs.
	keep := p.keep()
	if d := p.wait(t0, t0.Add(-gap), 10, 10+keep+5); d <= 0 {
		t.Fatalf("5 writers expected beyond the %d kept: waits %v", keep, d)
	}
	if d := p.wait(t0, t0.Add(-gap), 10, 10+keep); d != 0 {
		t.Fatalf("only the %d kept writers expected: waits %v", keep, d)
	}
}

// TestGatherLeavesWritersToCoverTheFlush: a group never waits for every
// writer (they would compute together, then all wait for the disk while
// the processors idle): it leaves one writer per processor plus those
// that arrive during one flush, measured, not a constant per processor.
func TestGatherLeavesWritersToCoverTheFlush(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	for _, c := range []struct {
		name       string
		procs      int
		gap, flush time.Duration
		keep       int
	}{
		{"2 processors, 150 µs flush, a writer every 25 µs", 2, 25 * time.Microsecond, 150 * time.Microsecond, 8},
		{"16 processors, 240 µs flush, a writer every 11 µs", 16, 11 * time.Microsecond, 240 * time.Microsecond, 16 + 22},
		{"16 processors, a fast disk", 16, 11 * time.Microsecond, 20 * time.Microsecond, 16 + 2},
	} {
		p := steady(c.gap, c.flush, t0)
		p.procs = c.procs
		if k := p.keep(); k != c.keep {
			t.Errorf("%s: keeps %d writers computing, want %d", c.name, k, c.keep)
		}
		const callers = 64
		if d := p.wait(t0, t0, callers-c.keep-1, callers); d == 0 {
			t.Errorf("%s: with %d writers computing, the group does not wait", c.name, c.keep+1)
		}
		if d := p.wait(t0, t0, callers-c.keep, callers); d != 0 {
			t.Errorf("%s: with %d writers computing, the group waits %v", c.name, c.keep, d)
		}
	}
}

// TestGatherSlowDiskDoesNotStarve: a disk whose flush takes 50 ms does
// not make groups wait 8 flushes: the cap bounds every wait, and a
// measured flush counts as at most the cap.
func TestGatherSlowDiskDoesNotStarve(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	p := steady(10*time.Microsecond, 50*time.Millisecond, t0)
	if p.flush > maxGather {
		t.Fatalf("a flush measured as %v, above the cap", p.flush)
	}
	if d := p.wait(t0, t0, 1, -1); d > maxGather {
		t.Fatalf("a slow disk makes a group wait %v, past the cap %v", d, maxGather)
	}
	// Keep the stream going past the cap: the group must run by then.
	for i := 1; ; i++ {
		now := t0.Add(time.Duration(i) * 10 * time.Microsecond)
		p.arrived(now)
		if p.wait(now, t0, 1+i, -1) == 0 {
			if now.Sub(t0) > maxGather {
				t.Fatalf("the group ran %v after its oldest op, past the cap", now.Sub(t0))
			}
			break
		}
		if now.Sub(t0) > maxGather {
			t.Fatalf("still gathering %v after its oldest op", now.Sub(t0))
		}
	}
}

// TestGatherStalledArrivalsDoNotHoldGroup: when the arrivals stop (every
// other writer is in a long handler, or done), the group does not wait
// out its window: it runs once stallGaps gaps passed without one.
func TestGatherStalledArrivalsDoNotHoldGroup(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	gap := 10 * time.Microsecond
	p := steady(gap, 200*time.Microsecond, t0)
	if d := p.wait(t0, t0, 1, 1000); d <= 0 || d > stallGaps*gap {
		t.Fatalf("just after an arrival the group waits %v; want (0, %v]", d, stallGaps*gap)
	}
	if d := p.wait(t0.Add(stallGaps*gap), t0, 1, 1000); d != 0 {
		t.Fatalf("%d gaps without an arrival, the group still waits %v", stallGaps, d)
	}
}

// TestGroupCommitGathersWritersOnTheirWay: writers that arrive one by one
// while more are expected are written as one group (one fdatasync), not
// forty; the group runs when the last expected one is queued but those
// left to keep the processors busy.
func TestGroupCommitGathersWritersOnTheirWay(t *testing.T) {
	const writers = 40
	c := &fakeClock{t: time.Unix(1e9, 0)}
	var keep int
	r := newRecordingCommitter(func() int { return writers + keep }, time.Hour)
	r.g.now = c.now
	r.g.policy = steadyCapped(time.Hour, 10*time.Microsecond, time.Millisecond, c.now())
	keep = r.g.policy.keep()
	var wg sync.WaitGroup
	var acked atomic.Int64
	for i := 0; i < writers; i++ {
		c.add(10 * time.Microsecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.g.do(i) {
				acked.Add(1)
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); i < writers-1 && r.queued() != i+1; {
			if time.Now().After(deadline) || len(r.sizes()) > 0 {
				t.Fatalf("a group ran with %d of %d writers queued (groups %v)", i+1, writers, r.sizes())
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	wg.Wait()
	if got := r.sizes(); len(got) != 1 || got[0] != writers || acked.Load() != writers {
		t.Fatalf("groups %v, %d acknowledged; want one group of %d", got, acked.Load(), writers)
	}
}

// TestGroupCommitStalledStreamRunsTheGroup: a group whose expected
// writers never come (a count that is wrong, handlers slower than
// thought) runs once arrivals stall, not after its cap (an hour here).
func TestGroupCommitStalledStreamRunsTheGroup(t *testing.T) {
	r := newRecordingCommitter(func() int { return 1000 }, time.Hour)
	r.g.policy = steadyCapped(time.Hour, 100*time.Microsecond, time.Hour, time.Now())
	done := make(chan bool)
	go func() { done <- r.g.do(1) }()
	select {
	case ok := <-done:
		if !ok || len(r.sizes()) != 1 {
			t.Fatalf("done %v, groups %v", ok, r.sizes())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a group waited for writers that stopped arriving")
	}
}

// TestGroupCommitFewWritersRunAtOnce: an agent that is not loaded pays no
// latency for gathering: with no other writer expected, or with no count
// at all (a store used directly) and ops one after another, every op runs
// at once.
func TestGroupCommitFewWritersRunAtOnce(t *testing.T) {
	for name, active := range map[string]func() int{
		"only itself expected": func() int { return 1 },
		"no count":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			r := newRecordingCommitter(active, time.Hour)
			for i := 0; i < 5; i++ {
				start := time.Now()
				r.g.do(i)
				if took := time.Since(start); took > 10*time.Second {
					t.Fatalf("op %d waited %v", i, took)
				}
			}
			if got := r.sizes(); len(got) != 5 {
				t.Fatalf("groups %v, want five of one", got)
			}
		})
	}
}

// TestGroupCommitCloseFailsGatheringOps: an op waiting for others to join
// its group when the committer closes fails (false) instead of waiting
// forever or running after the close.
func TestGroupCommitCloseFailsGatheringOps(t *testing.T) {
	r := newRecordingCommitter(func() int { return 1000 }, time.Hour)
	r.g.policy = steadyCapped(time.Hour, 10*time.Minute, time.Hour, time.Now())
	done := make(chan bool)
	go func() { done <- r.g.do(1) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.g.mu.Lock()
		n := len(r.g.queue)
		r.g.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) || len(r.sizes()) > 0 {
			t.Fatalf("the op did not wait to gather (groups %v)", r.sizes())
		}
		time.Sleep(time.Millisecond)
	}
	r.g.close()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("an op reported done after the close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a gathering op outlived the close")
	}
	if r.g.do(2) || len(r.sizes()) != 0 {
		t.Fatalf("ran after close: %v", r.sizes())
	}
}

// TestLedgerCountsActiveWriters: the ledger tells its store how many
// writers to expect: tickets out, less those whose handler runs (it may
// run long, and must not hold the others' group back).
func TestLedgerCountsActiveWriters(t *testing.T) {
	c := newClock()
	l, _ := New(NewMemory(Limits{}), Options{Now: c.Now})
	start := func(i int) *Ticket {
		st, err := l.Start("did:key:zA", id(i), c.Now().Add(time.Hour))
		if err != nil || st.Ticket == nil {
			t.Fatal(st.State, err)
		}
		return st.Ticket
	}
	a, b, d := start(1), start(2), start(3)
	if n := l.active(); n != 3 {
		t.Fatalf("three tickets out: active %d", n)
	}
	if err := a.Running(); err != nil {
		t.Fatal(err)
	}
	if n := l.active(); n != 2 {
		t.Fatalf("one handler running: active %d", n)
	}
	a.Finish([]byte("r"))
	b.Abandon()
	if n := l.active(); n != 1 {
		t.Fatalf("after Finish and Abandon: active %d", n)
	}
	if err := d.Running(); err != nil {
		t.Fatal(err)
	}
	d.Abandon() // a running ticket abandoned: its handler's count ends too
	if n := l.active(); n != 0 {
		t.Fatalf("all ended: active %d", n)
	}
}

// TestGatherGroupQueuedBehindARunningOneStillGathers: ops that queued
// while a group ran (its flush as long as the cap) have waited, but not
// gathered: nothing could run meanwhile, and the running group's writers
// could not arrive. The next group must not run the moment the last one
// ends with only those ops (two groups taking turns, each half the
// writers): its window and its stall count from the end of the last
// group, and the cap still bounds the wait from there.
func TestGatherGroupQueuedBehindARunningOneStillGathers(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	gap, flush := 100*time.Microsecond, maxGather
	p := steady(gap, flush, t0.Add(-flush/2)) // the last arrival halfway through the flush
	p.flushed(flush, t0, true)                // the group ends at t0
	oldest := t0.Add(-flush + gap)
	const queued, expected = 32, 64
	d := p.wait(t0, oldest, queued, expected)
	if d <= 0 {
		t.Fatalf("just after the last group ended, %d of %d writers queued: the group runs at once", queued, expected)
	}
	if d > stallGaps*gap {
		t.Fatalf("waits %v with no arrival since the group ended; want at most %d gaps (%v)", d, stallGaps, stallGaps*gap)
	}
	// Its writers come back: each arrival extends the wait, never past the
	// cap counted from the end of the last group.
	for i := 1; ; i++ {
		now := t0.Add(time.Duration(i) * gap)
		p.arrived(now)
		d := p.wait(now, oldest, queued+i, expected)
		if now.Add(d).After(t0.Add(maxGather)) {
			t.Fatalf("after %d arrivals the group would wait until %v past the end of the last group, past the cap", i, now.Add(d).Sub(t0))
		}
		if d == 0 {
			if queued+i < expected-p.keep() && now.Sub(t0) < maxGather {
				t.Fatalf("ran with %d queued, %d expected, %d kept, %v after the last group", queued+i, expected, p.keep(), now.Sub(t0))
			}
			break
		}
	}
}

// TestGatherStallCountsFromTheEndOfTheLastGroup: a stream that stalled
// (no arrival for stallGaps gaps after the last group ended) still runs
// its group at once; the silence while a group ran is not such a stall.
func TestGatherStallCountsFromTheEndOfTheLastGroup(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	gap := 10 * time.Microsecond
	p := steady(gap, 500*time.Microsecond, t0.Add(-400*time.Microsecond))
	p.flushed(500*time.Microsecond, t0, true)
	if d := p.wait(t0, t0.Add(-450*time.Microsecond), 5, 1000); d <= 0 {
		t.Fatalf("at the end of a group, its silence counted as a stall: waits %v", d)
	}
	if d := p.wait(t0.Add(stallGaps*gap), t0.Add(-450*time.Microsecond), 5, 1000); d != 0 {
		t.Fatalf("%d gaps after the group ended without an arrival, still waits %v", stallGaps, d)
	}
}

// TestGatherKeepCountsTheRateNotTheBurst: writers released together by a
// group come back in a burst; the spacing within the burst is not the
// rate at which writers arrive while a group syncs. keep divides the
// flush by the spacing over whole cycles: 32 arrivals 25 µs apart every
// 2 ms are one writer every 62.5 µs, so a 1 ms flush keeps 2 + 16
// writers computing, not 2 + 40 (which would cut every group at about
// half the writers).
func TestGatherKeepCountsTheRateNotTheBurst(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	p := gatherPolicy{cap: maxGather, procs: 2}
	const burst, spacing, cycle = 32, 25 * time.Microsecond, 2 * time.Millisecond
	for c := 0; c < 64; c++ {
		start := t0.Add(time.Duration(c) * cycle)
		p.started(start)
		for i := 0; i < burst; i++ {
			p.arrived(start.Add(time.Duration(i) * spacing))
		}
		p.flushed(time.Millisecond, start.Add(time.Millisecond), true)
	}
	if want := 2 + 16; p.keep() != want {
		t.Fatalf("keeps %d writers computing (gap %v, rate %v), want %d", p.keep(), p.gap, p.rate, want)
	}
}

// TestGroupCommitNextGroupWaitsForTheWritersOfTheLast: ops that queued
// behind a slow group, past their window by the clock when it ends, do not
// run the moment it ends while the writers it releases are on their way:
// the second group waits for them (but those kept computing) instead of
// leaving the writers split into two groups that take turns.
func TestGroupCommitNextGroupWaitsForTheWritersOfTheLast(t *testing.T) {
	const expected = 20
	c := &fakeClock{t: time.Unix(1e9, 0)}
	release := make(chan struct{})
	r := &recordingCommitter{}
	r.g = newGroupCommit(func(q []int) int { return len(q) }, func(group []int) {
		if group[0] == 0 {
			<-release // the first group runs until the test ends it
		}
		r.mu.Lock()
		r.groups = append(r.groups, append([]int(nil), group...))
		r.mu.Unlock()
	})
	var active atomic.Int64
	active.Store(1) // the first op alone
	r.g.now, r.g.active = c.now, func() int { return int(active.Load()) }
	// A flush as long as the cap (a measured one counts as at most the
	// cap: it stays), a writer every 250 µs over whole cycles: 10 kept.
	r.g.policy = steady(500*time.Microsecond, maxGather, c.now())
	r.g.policy.rate = 250 * time.Microsecond
	keep := r.g.policy.keep()
	var wg sync.WaitGroup
	start := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.g.do(i)
		}()
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d queued, groups %v", what, r.queued(), r.sizes())
			}
		}
	}
	start(0) // the only writer expected: it runs at once
	waitFor("the first op runs", func() bool {
		r.g.mu.Lock()
		defer r.g.mu.Unlock()
		return r.g.leading
	})
	active.Store(expected)
	const behind = 6
	for i := 1; i <= behind; i++ {
		c.add(400 * time.Microsecond) // the last one past the first's window
		start(i)
		waitFor("queued behind the running group", func() bool { return r.queued() == i })
	}
	close(release)
	waitFor("the first group ends", func() bool { return len(r.sizes()) == 1 })
	// The writers released come back, one every 50 µs: the group runs once
	// only the kept ones are missing.
	for i := behind + 1; i <= expected-keep; i++ {
		time.Sleep(time.Millisecond) // a group that ran too soon shows
		if got := r.sizes(); len(got) != 1 {
			t.Fatalf("with %d of %d expected writers queued, %d kept computing: groups %v", i-1, expected, keep, got)
		}
		c.add(50 * time.Microsecond)
		start(i)
		if i < expected-keep {
			waitFor("queued for the second group", func() bool { return r.queued() == i })
		}
	}
	wg.Wait()
	if got := r.sizes(); len(got) != 2 || got[1] != expected-keep {
		t.Fatalf("groups %v; want the first alone, then the %d queued behind it with %d that came after", got, behind, expected-keep-behind)
	}
}

// TestGatherFirstBackFromAFullGroupIsNotAlone: a group that held every
// writer had no arrival while it ran; the first of its writers back is
// not a caller alone when the ledger still counts the others out (their
// tickets): it waits for them (at most until the stream stalls) instead
// of paying an fdatasync for itself, every other group. With no count,
// or with itself the only writer expected, it runs at once, as before.
func TestGatherFirstBackFromAFullGroupIsNotAlone(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	gap := 20 * time.Microsecond
	p := steady(gap, 300*time.Microsecond, t0.Add(-time.Millisecond))
	p.flushed(300*time.Microsecond, t0.Add(-gap), false) // nobody arrived while it ran
	if d := p.wait(t0, t0, 1, 64); d <= 0 || d > stallGaps*gap {
		t.Fatalf("the first of 64 writers back from a full group waits %v; want (0, %v]", d, stallGaps*gap)
	}
	if d := p.wait(t0, t0, 1, -1); d != 0 {
		t.Fatalf("with no count, a lone op after a group without overlap waits %v", d)
	}
	if d := p.wait(t0, t0, 1, 1); d != 0 {
		t.Fatalf("the only writer expected waits %v", d)
	}
}
