package ledger

import (
	"runtime"
	"sync"
	"time"
)

// Gathering (see groupCommit and gatherPolicy): a group waits at most
// maxGather for others to join it, and at most gatherFlushes times the
// time a group takes to run (its write and fdatasync, measured), both
// counted from when it could first have run (its oldest op's arrival, or
// the end of the group that ran meanwhile); it stops waiting as soon as
// the arrivals stop for stallGaps times their measured spacing, and does
// not wait at all when fewer than one more writer is predicted within its
// wait. ewmaShift sets how fast the measurements follow a change (each
// new sample weighs 1/2^ewmaShift).
const (
	maxGather     = 2 * time.Millisecond
	gatherFlushes = 8
	stallGaps     = 4
	ewmaShift     = 3
)

// gatherPolicy decides how long a queued group may still wait for more
// writers before it runs, from three measurements it keeps: gap, the
// spacing of arrivals (a moving average), rate, the spacing of arrivals
// over whole group cycles (a moving average of a cycle's length over the
// ops that arrived in it), and flush, the time a group takes to run (a
// moving average). Its methods take the time as an argument: the policy
// is a function of values, tested as such.
//
// Why wait at all: a group costs a fixed price however many ops it
// carries (an fdatasync's system time, and the processor its thread
// holds while the device flushes: the Go runtime lets a thread blocked
// in a system call keep its processor until its monitor takes it back,
// and in a busy process that monitor sleeps far longer than an
// fdatasync lasts). While writers keep arriving, a group that waits
// gathers more of them for the same price; the writers not yet queued
// keep the processors busy meanwhile.
//
// Why not always: a writer that waits for company that does not come
// only pays latency, and a group that gathers every writer leaves the
// processors idle while it syncs. So when the number of writers expected
// is known, the group does not wait for the last keep of them: those
// keep the processors busy while it syncs. keep is the processors (one
// writer each) plus the writers that arrive during one flush (flush /
// rate): the work that covers the sync. It follows the machine and the
// load: on two processors with a 150 µs flush and a writer every 25 µs
// it is 8, the four per processor that measured best on such a machine
// when it was a constant (docs/PERFORMANCE.md, P6).
//
// The writers of a running group cannot arrive before it ends, and no
// other group can run meanwhile (docs/PERFORMANCE.md, "Round 7: what caps
// a group"). So the time an op spends queued behind a running group does
// not count against its gathering window, and the silence while a group
// runs is not a stall: both are counted from the end of the latest group
// (released). Likewise keep divides by rate, not gap: arrivals come in
// bursts (a group's writers, released together, come back close
// together), and the spacing within a burst would count the writers of a
// whole flush two or three times over.
type gatherPolicy struct {
	cap   time.Duration // the longest any group waits (maxGather)
	procs int           // processors that run writers (GOMAXPROCS)
	gap   time.Duration // mean spacing of arrivals; 0: none measured
	flush time.Duration // mean run time of a group; 0: none measured
	last  time.Time     // the latest arrival
	// rate is the mean spacing of arrivals over group cycles (0: none
	// measured); cycle is when the latest group started, and arrivals
	// counts the arrivals since.
	rate     time.Duration
	cycle    time.Time
	arrivals int
	// solo: the cycle before the latest group's start had a single
	// arrival (one writer after another, whatever the count says: the
	// count also holds tickets of messages that never write).
	solo bool
	// released is when the latest group ended (its writers woken).
	released time.Time
	// overlap: an op arrived while the latest group ran. Without, and
	// with no count of the writers expected, the writers come one after
	// another (one caller in a loop): a lone op then runs at once, however
	// closely the ops follow each other. With a count, the count decides:
	// a group that held every writer also has no overlap, and the first
	// of them back is not alone.
	overlap bool
}

// ewma moves the average avg toward the sample x.
func ewma(avg, x time.Duration) time.Duration {
	if avg == 0 {
		return x
	}
	return avg + (x-avg)>>ewmaShift
}

// arrived records an arrival at now. A spacing longer than the cap
// counts as the cap (an idle spell says only that arrivals are sparse),
// and one longer than stallGaps times the mean replaces the mean: the
// stream stalled, and the first arrival after it must not wait for a
// burst that ended.
func (p *gatherPolicy) arrived(now time.Time) {
	p.arrivals++
	if !p.last.IsZero() {
		d := min(max(now.Sub(p.last), 0), p.cap)
		if d > stallGaps*p.gap {
			p.gap = d
		} else {
			p.gap = ewma(p.gap, d)
		}
	}
	p.last = now
}

// started records that a group starts at now: the cycle since the
// latest start, over the ops that arrived in it, is a sample of rate (at
// most the cap, like a gap).
func (p *gatherPolicy) started(now time.Time) {
	if !p.cycle.IsZero() && p.arrivals > 0 {
		p.rate = ewma(p.rate, min(max(now.Sub(p.cycle), 0)/time.Duration(p.arrivals), p.cap))
	}
	p.solo = p.arrivals == 1
	p.cycle, p.arrivals = now, 0
}

// flushed records that a group took d to run, ending at end, and whether
// an op arrived meanwhile.
func (p *gatherPolicy) flushed(d time.Duration, end time.Time, overlap bool) {
	p.flush = ewma(p.flush, min(max(d, 0), p.cap))
	p.released = end
	p.overlap = overlap
}

// keep is how many writers a group leaves computing (see gatherPolicy):
// the processors plus the writers that arrive during one flush, at the
// arrivals' rate over whole cycles (their gap while no cycle is
// measured).
func (p *gatherPolicy) keep() int {
	k := p.procs
	spacing := p.rate
	if spacing <= 0 {
		spacing = p.gap
	}
	if spacing > 0 {
		k += int((p.flush + spacing - 1) / spacing)
	}
	return k
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// wait returns how much longer, from now, a group whose oldest op was
// queued at oldest, holding queued ops, may wait; 0: run it now.
// expected is how many writers are expected soon, the queued ones
// included (negative: unknown).
func (p *gatherPolicy) wait(now, oldest time.Time, queued, expected int) time.Duration {
	if queued == 1 && !p.overlap && (expected < 0 || p.solo) {
		return 0 // one writer after another: nobody else on the way
	}
	if expected >= 0 && queued >= expected-p.keep() {
		return 0 // the rest keep the processors busy meanwhile
	}
	if !p.cycle.IsZero() && !oldest.After(p.cycle) {
		return 0 // left out of the latest group (it was full): next, at once
	}
	window := min(p.cap, gatherFlushes*p.flush)
	if p.gap <= 0 || p.gap >= window {
		return 0 // fewer than one more writer predicted in the window
	}
	// Behind a running group nothing could run, and its writers could not
	// arrive: the window and the stall count from its end.
	from, last := later(oldest, p.released), later(p.last, p.released)
	d := min(from.Add(window).Sub(now), last.Add(stallGaps*p.gap).Sub(now))
	return max(d, 0)
}

// groupCommit is the leader-based group committer both durable stores
// use. There is no committer goroutine: a caller that finds no group
// running, and the queue ready (gatherPolicy), takes what is queued (as
// much as take allows, at least one op) and runs it itself; callers
// arriving meanwhile wait. Exactly the members of a group are woken when
// it is durable. One group runs at a time.
//
// The decision is taken by whoever is running when the queue becomes
// ready: the writer whose arrival makes it ready, or the oldest queued op
// when its wait ends (it alone waits with a timer, and is woken when it
// becomes the oldest). Handing the lead to a parked goroutine instead made
// each group wait until that goroutine was scheduled behind every
// runnable caller.
type groupCommit[T any] struct {
	mu      sync.Mutex
	idle    *sync.Cond // signalled when leading turns false (for close)
	queue   []*groupWaiter[T]
	leading bool
	closed  bool
	// active, when set, is how many writers are expected to write soon
	// (the queued ones included); unset, the policy relies on the
	// arrivals it measures alone.
	active func() int
	policy gatherPolicy
	now    func() time.Time
	// take returns how many of the queued ops (oldest first) the next
	// group holds; run runs one group.
	take func(queued []T) int
	run  func(group []T)
	pool sync.Pool // of *groupWaiter[T]
}

// groupWaiter is one queued op. Waiters are reused (pool): a waiter is
// referenced by the committer only until do returns.
type groupWaiter[T any] struct {
	op    T
	since time.Time
	wake  chan struct{} // a token: look again (done, shut, or oldest queued)
	done  bool
	shut  bool // the committer closed before the op ran
}

func newGroupCommit[T any](take func(queued []T) int, run func(group []T)) *groupCommit[T] {
	// GOMAXPROCS is read once: the runtime takes its scheduler lock to
	// answer, too dear for every queued op.
	g := &groupCommit[T]{policy: gatherPolicy{cap: maxGather, procs: runtime.GOMAXPROCS(0)}, now: time.Now, take: take, run: run}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// wait is how much longer the queue may wait before it runs (0: now).
// g.mu is held and the queue is not empty.
func (g *groupCommit[T]) wait(now time.Time) time.Duration {
	expected := -1
	if g.active != nil {
		expected = g.active()
	}
	return g.policy.wait(now, g.queue[0].since, len(g.queue), expected)
}

// poke gives w a wake-up token (it may hold one already).
func (w *groupWaiter[T]) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// lead runs the next group. g.mu is held, and released while it runs.
func (g *groupCommit[T]) lead() {
	g.leading = true
	ops := make([]T, len(g.queue))
	for i, q := range g.queue {
		ops[i] = q.op
	}
	n := min(max(g.take(ops), 1), len(ops))
	group := append([]*groupWaiter[T](nil), g.queue[:n]...)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	start := g.now()
	g.policy.started(start)
	g.mu.Unlock()
	g.run(ops[:n])
	end := g.now()
	g.mu.Lock()
	g.policy.flushed(end.Sub(start), end, len(g.queue) > 0)
	for _, q := range group {
		q.done = true
		q.poke()
	}
	g.leading = false
	g.idle.Broadcast()
}

// do queues op and returns true once a group holding it ran, false when
// the committer was closed before.
func (g *groupCommit[T]) do(op T) bool {
	w, _ := g.pool.Get().(*groupWaiter[T])
	if w == nil {
		w = &groupWaiter[T]{wake: make(chan struct{}, 1)}
	}
	w.op, w.done, w.shut = op, false, false
	select {
	case <-w.wake: // a token left from its last use
	default:
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		g.pool.Put(w)
		return false
	}
	w.since = g.now()
	g.policy.arrived(w.since)
	g.queue = append(g.queue, w)
	for !w.done && !w.shut {
		if !g.leading {
			if g.closed {
				for _, q := range g.queue {
					q.shut = true
					q.poke()
				}
				g.queue = nil
				break
			}
			d := g.wait(g.now())
			if d <= 0 {
				g.lead()
				continue
			}
			if g.queue[0] == w {
				// The oldest op waits for the queue to fill, at most until
				// its gathering time is up; it looks again when woken.
				t := time.NewTimer(d)
				g.mu.Unlock()
				select {
				case <-w.wake:
				case <-t.C:
				}
				t.Stop()
				g.mu.Lock()
				continue
			}
		}
		g.mu.Unlock()
		<-w.wake
		g.mu.Lock()
	}
	if !g.leading && len(g.queue) > 0 {
		g.queue[0].poke() // the new oldest: lead, or wait with a timer
	}
	done := w.done
	g.mu.Unlock()
	var zero T
	w.op = zero
	g.pool.Put(w)
	return done
}

// close waits for a running group and refuses every later op (queued ops
// not yet taken fail too).
func (g *groupCommit[T]) close() {
	g.mu.Lock()
	g.closed = true
	for g.leading {
		g.idle.Wait()
	}
	for _, q := range g.queue {
		q.shut = true
		q.poke()
	}
	g.queue = nil
	g.mu.Unlock()
}
