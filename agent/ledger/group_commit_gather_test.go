package ledger

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Review of PERF-4 (docs/SPEC-DECISIONS.md): the gathering rule that
// counts a group's window and stall from the end of the latest group, and
// lets the ledger's count of expected writers decide for a lone op.

// loneWriterRun drives p as groupCommit does for one writer that sends
// one op at a time: the op arrives, waits what the policy says (its timer
// re-asks when it fires), runs alone for flush, and the writer computes
// for compute before its next op. expected is the ledger's count at each
// op (the writer's own ticket included). It returns the mean wait of ops
// after a warm-up, and the mean cycle (arrival to next arrival).
func loneWriterRun(t *testing.T, p gatherPolicy, flush, compute time.Duration, expected int) (wait, cycle time.Duration) {
	t.Helper()
	const warm, ops = 100, 300
	t0 := time.Unix(1e9, 0)
	at := t0
	var waited time.Duration
	var from time.Time
	for i := 0; i < ops; i++ {
		if i == warm {
			waited, from = 0, at
		}
		p.arrived(at)
		now := at
		for tries := 0; ; tries++ {
			d := p.wait(now, at, 1, expected)
			if d <= 0 {
				break
			}
			if tries > 100 {
				t.Fatalf("op %d re-asked the policy 100 times (waited %v)", i, now.Sub(at))
			}
			now = now.Add(d)
		}
		waited += now.Sub(at)
		p.started(now)
		end := now.Add(flush)
		p.flushed(flush, end, false)
		at = end.Add(compute)
	}
	n := time.Duration(ops - warm)
	return waited / n, at.Sub(from) / n
}

// TestGatherLoneWriterAmongTicketsThatNeverWritePaysNoWindow: the count
// the policy sees (Ledger.active: tickets out, less those in a handler)
// includes tickets that never write durably: every PING, HELLO,
// CAP_QUERY, STREAM_START and STREAM_DATA takes a ticket and ends it in
// the volatile cache (agent.dispatch); so do invocations refused before
// Running, and a ticket leaked by a panic before Running stays counted
// for good. One caller invoking one message at a time next to a few such
// tickets is still the only writer: it must not wait, op after op, for a
// window nobody can fill. Before PERF-4 a lone op after a group during
// which nobody arrived ran at once whatever the count.
func TestGatherLoneWriterAmongTicketsThatNeverWritePaysNoWindow(t *testing.T) {
	for _, c := range []struct {
		name           string
		procs          int
		flush, compute time.Duration
		nonWriters     int
	}{
		{"2 processors, 150 µs flush, 4 tickets that never write", 2, 150 * time.Microsecond, 100 * time.Microsecond, 4},
		{"2 processors, 1 ms flush (a common SSD), 8 tickets that never write", 2, time.Millisecond, 200 * time.Microsecond, 8},
		{"16 processors, 240 µs flush, 20 tickets that never write", 16, 240 * time.Microsecond, 60 * time.Microsecond, 20},
	} {
		p := gatherPolicy{cap: maxGather, procs: c.procs}
		wait, cycle := loneWriterRun(t, p, c.flush, c.compute, 1+c.nonWriters)
		if wait != 0 {
			alone := c.flush + c.compute
			t.Errorf("%s: a lone writer waits %v per op for company that never writes (cycle %v, %.2fx the %v it takes without waiting)",
				c.name, wait, cycle, float64(cycle)/float64(alone), alone)
		}
		// Its own ticket the only one out: it never waits (as before).
		if wait, _ := loneWriterRun(t, gatherPolicy{cap: maxGather, procs: c.procs}, c.flush, c.compute, 1); wait != 0 {
			t.Errorf("%s: the only writer expected waits %v per op", c.name, wait)
		}
	}
}

// TestGroupCommitLoneWriterAmongTicketsThatNeverWriteRunsAtOnce: the same
// through the committer. A lone op after a one-op group during which
// nobody arrived is one writer after another, whatever the count says;
// here it waits its stall (40 minutes on this policy's scale) for eight
// tickets that never write.
func TestGroupCommitLoneWriterAmongTicketsThatNeverWriteRunsAtOnce(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	var active atomic.Int64
	active.Store(1)
	r := newRecordingCommitter(func() int { return int(active.Load()) }, time.Hour)
	defer r.g.close()
	r.g.now = c.now
	// Arrivals every 10 minutes, groups 10 minutes long, capped at an
	// hour: the 2 ms and 250 µs of a real agent, on a scale no scheduler
	// delay can blur.
	r.g.policy = steadyCapped(time.Hour, 10*time.Minute, 10*time.Minute, c.now())
	for i := 0; i < 2; i++ {
		c.add(10 * time.Minute)
		if !r.g.do(i) { // the only writer: at once, a group of one, nobody arrived meanwhile
			t.Fatalf("op %d failed", i)
		}
	}
	active.Store(1 + 8) // eight tickets out that never write (PINGs, queries, stream chunks)
	c.add(10 * time.Minute)
	done := make(chan bool, 1)
	go func() { done <- r.g.do(2) }()
	select {
	case ok := <-done:
		if !ok || len(r.sizes()) != 3 {
			t.Fatalf("done %v, groups %v", ok, r.sizes())
		}
	case <-time.After(10 * time.Second):
		r.g.mu.Lock()
		d := r.g.wait(c.now())
		r.g.mu.Unlock()
		t.Fatalf("a lone writer after a group of one waits (still %v) for 8 counted tickets that never write", d)
	}
}

// TestGatherOpPassedOverByAFullGroupGetsNoSecondWindow: an op that was
// queued when a group started, but left out of it (takeWALGroup stops at
// maxGroup ops or maxGroupBytes: 16 replies of the default 256 KiB
// reservation fill one), has had its window: the group it waited behind
// could have held it. Counting its window again from the end of that
// group makes it wait a window per group ahead of it, past the bound of
// PERF-4 (the running group's own time plus one window, plus its own
// flush).
func TestGatherOpPassedOverByAFullGroupGetsNoSecondWindow(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	gap, flush := 25*time.Microsecond, 150*time.Microsecond
	p := steady(gap, flush, t0)
	oldest := t0.Add(-time.Millisecond) // queued a window before the group started
	p.started(t0)                       // a full group starts and leaves it queued
	queued := 1
	for at := t0.Add(gap); at.Before(t0.Add(flush)); at = at.Add(gap) {
		p.arrived(at) // the writers keep arriving while it runs
		queued++
	}
	end := t0.Add(flush)
	p.flushed(flush, end, true)
	// The writers go on arriving after it ends; the op runs in the next
	// group, which it may start at once.
	const expected = 64
	now := end
	for i := 0; ; i++ {
		d := p.wait(now, oldest, queued, expected)
		if d == 0 {
			break
		}
		if i > 10000 {
			t.Fatalf("still waiting %v after the group that passed it over", now.Sub(end))
		}
		now = now.Add(min(d, gap))
		p.arrived(now)
		queued++
	}
	if extra := now.Sub(end); extra != 0 {
		t.Fatalf("an op passed over by a full group waits %v more after it (a second window of up to %v; then %d queued, %d expected, %d kept)",
			extra, min(p.cap, gatherFlushes*p.flush), queued, expected, p.keep())
	}
}

// TestGroupCommitOpLeftOutOfAFullGroupRunsNext: the same through the
// committer and the write-ahead log's own take: two 4 MiB replies queue
// behind a running group; the first runs in the next group, alone
// (takeWALGroup takes one such reply per group); the second, passed over,
// must run as soon as that group ends, not wait a window (here its stall,
// 40 minutes) over again.
func TestGroupCommitOpLeftOutOfAFullGroupRunsNext(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	release := make(chan struct{})
	var mu sync.Mutex
	var groups [][]*walOp
	first := &walOp{kind: stateRunning}
	g := newGroupCommit(takeWALGroup, func(group []*walOp) {
		if group[0] == first {
			<-release
		}
		mu.Lock()
		groups = append(groups, append([]*walOp(nil), group...))
		mu.Unlock()
	})
	var active atomic.Int64
	active.Store(1)
	g.now, g.active = c.now, func() int { return int(active.Load()) }
	g.policy = steadyCapped(time.Hour, 10*time.Minute, 10*time.Minute, c.now())
	sizes := func() []int {
		mu.Lock()
		defer mu.Unlock()
		var n []int
		for _, gr := range groups {
			n = append(n, len(gr))
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				g.mu.Lock()
				q := len(g.queue)
				g.mu.Unlock()
				t.Fatalf("%s: %d queued, groups %v", what, q, sizes())
			}
		}
	}
	queued := func(n int) func() bool {
		return func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.queue) == n
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer g.close() // runs before wg.Wait: the op still gathering fails
	start := func(op *walOp) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.do(op)
		}()
	}
	start(first) // the only writer expected: it runs at once, until released
	waitFor("the first group runs", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.leading
	})
	active.Store(64)
	big1 := &walOp{kind: stateDone, reply: make([]byte, maxGroupBytes)}
	big2 := &walOp{kind: stateDone, reply: make([]byte, maxGroupBytes)}
	c.add(time.Microsecond)
	start(big1)
	waitFor("the first reply queues", queued(1))
	c.add(time.Microsecond)
	start(big2)
	waitFor("the second reply queues", queued(2))
	close(release)
	waitFor("the first group ends", func() bool { return len(sizes()) == 1 })
	// Behind the running group, the replies gather for a window from its
	// end (PERF-4); a writer arriving once it is over runs the next group.
	c.add(2 * time.Hour)
	start(&walOp{kind: stateRunning})
	waitFor("the next group runs the first reply", func() bool { return len(sizes()) >= 2 })
	waitFor("the reply left out of it runs as soon as it ends", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, gr := range groups[1:] {
			for _, o := range gr {
				if o == big2 {
					return true
				}
			}
		}
		return false
	})
}

// TestGatherFirstArrivalAfterQuietSpellOnSlowDiskRunsAtOnce: after a
// quiet spell the gap is reset to the cap (a spacing counts as at most the
// cap), and "fewer than one more writer predicted" is gap > window. When
// the flush is 250 µs or more (8 flushes reach the 2 ms cap: most disks'
// fdatasync) the window is the cap too, the test never holds, and the
// first writer after a quiet second waits the whole 2 ms for a burst that
// ended (PERF-1 promises it never does). Before PERF-4 a lone op escaped
// through the no-overlap rule unless the last group had an arrival while
// it ran; with PERF-4 any count above the kept writers also holds it.
func TestGatherFirstArrivalAfterQuietSpellOnSlowDiskRunsAtOnce(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	for _, c := range []struct {
		name     string
		flush    time.Duration
		overlap  bool
		expected int
	}{
		{"1 ms flush, no count, the burst's last group overlapped", time.Millisecond, true, -1},
		{"1 ms flush, 5 tickets counted", time.Millisecond, false, 5},
		{"300 µs flush, 5 tickets counted", 300 * time.Microsecond, false, 5},
	} {
		p := steady(10*time.Microsecond, c.flush, t0)
		p.started(t0)
		p.flushed(c.flush, t0.Add(c.flush), c.overlap)
		now := t0.Add(time.Second)
		p.arrived(now)
		if d := p.wait(now, now, 1, c.expected); d != 0 {
			t.Errorf("%s: the first writer after a quiet second waits %v (gap %v, window %v)",
				c.name, d, p.gap, min(p.cap, gatherFlushes*p.flush))
		}
	}
}
