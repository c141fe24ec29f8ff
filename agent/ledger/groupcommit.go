package ledger

import (
	"runtime"
	"sync"
	"time"
)

// Gathering (see groupCommit): a durable write waits at most maxGather
// for others to join its group, and a group does not wait for the last
// computing writers per processor: they keep the processors busy while
// it syncs. Four cover about two fdatasyncs of the work a writer does
// between two durable writes on the 2-core machine of
// docs/PERFORMANCE.md (P6: 2 per processor gathered cohorts, 3 to 5
// measured alike within the noise).
const (
	maxGather = 2 * time.Millisecond
	computing = 4
)

// groupCommit is the leader-based group committer both durable stores
// use. There is no committer goroutine: a caller that finds no group
// running, and the queue ready (below), takes what is queued (as much as
// take allows, at least one op) and runs it itself; callers arriving
// meanwhile wait. Exactly the members of a group are woken when it is
// durable. One group runs at a time.
//
// Gathering. A group costs a fixed price however many ops it carries: an
// fdatasync's system time, and the processor its thread holds while the
// device flushes (the Go runtime lets a thread blocked in a system call
// keep its processor until its monitor takes it back, and in a busy
// process that monitor sleeps far longer than an fdatasync lasts). So the
// queue is not run the moment it holds one op while more writers are on
// their way: it is ready once all but computing per processor of the
// writers the ledger expects soon are queued (active: its tickets out,
// less those whose handler runs, which may run long), or once its oldest
// op has waited maxGather. The writers left out keep the processors busy
// while the group's fdatasync runs; waiting for them too gathered every
// caller into one cohort that computed, then waited for the disk,
// together. With few writers, or active unset (a store used directly),
// every op runs at once.
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
	// active, when set, is how many writers are expected to write soon;
	// keep of them (computing per processor) are not waited for.
	active func() int
	keep   int
	gather time.Duration
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
	g := &groupCommit[T]{gather: maxGather, keep: computing * runtime.GOMAXPROCS(0), take: take, run: run}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// ready reports whether the queue may run now. g.mu is held.
func (g *groupCommit[T]) ready(now time.Time) bool {
	if len(g.queue) == 0 {
		return false
	}
	need := 1
	if g.active != nil {
		need = max(need, g.active()-g.keep)
	}
	return len(g.queue) >= need || now.Sub(g.queue[0].since) >= g.gather
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
	g.mu.Unlock()
	g.run(ops[:n])
	g.mu.Lock()
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
	w.op, w.since, w.done, w.shut = op, time.Now(), false, false
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
			now := time.Now()
			if g.ready(now) {
				g.lead()
				continue
			}
			if g.queue[0] == w {
				// The oldest op waits for the queue to fill, at most until
				// its gathering time is up.
				t := time.NewTimer(g.gather - now.Sub(w.since))
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
