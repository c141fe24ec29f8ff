package ledger

import "sync"

// groupCommit is the leader-based group committer both durable stores
// use: the first caller to find no group running takes what is queued (as
// much as take allows, at least one) and runs it itself; callers arriving
// meanwhile wait and are run together in the next group. There is no
// committer goroutine. When a group is done the leader wakes exactly its
// members and hands the lead to the oldest caller still queued, so a group
// costs one wake-up per caller, not one per waiting caller.
type groupCommit[T any] struct {
	mu      sync.Mutex
	idle    *sync.Cond // signalled when leading turns false (for close)
	queue   []*groupWaiter[T]
	leading bool
	closed  bool
}

type groupWaiter[T any] struct {
	op   T
	wake chan struct{} // one send: done, or the lead handed over
	done bool
	shut bool // the committer closed before the op ran
}

func newGroupCommit[T any]() *groupCommit[T] {
	g := &groupCommit[T]{}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// do queues op and returns true once a group holding it ran, false when
// the committer was closed before. take returns how many of the queued ops
// (oldest first) the next group holds; run runs one group.
func (g *groupCommit[T]) do(op T, take func(queued []T) int, run func(group []T)) bool {
	w := &groupWaiter[T]{op: op, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.queue = append(g.queue, w)
	if g.leading {
		g.mu.Unlock()
		<-w.wake
		g.mu.Lock()
		if w.done || w.shut {
			g.mu.Unlock()
			return w.done
		}
		// The lead was handed over: w is the oldest queued.
	}
	g.leading = true
	for !w.done {
		if g.closed {
			for _, q := range g.queue {
				q.shut = true
				if q != w {
					q.wake <- struct{}{}
				}
			}
			g.queue = nil
			g.leading = false
			g.idle.Broadcast()
			g.mu.Unlock()
			return false
		}
		ops := make([]T, len(g.queue))
		for i, q := range g.queue {
			ops[i] = q.op
		}
		n := min(max(take(ops), 1), len(ops))
		group := append([]*groupWaiter[T](nil), g.queue[:n]...)
		g.queue = append(g.queue[:0], g.queue[n:]...)
		g.mu.Unlock()
		run(ops[:n])
		g.mu.Lock()
		for _, q := range group {
			q.done = true
			if q != w {
				q.wake <- struct{}{}
			}
		}
	}
	if len(g.queue) > 0 {
		g.queue[0].wake <- struct{}{} // hand the lead over; leading stays true
	} else {
		g.leading = false
		g.idle.Broadcast()
	}
	g.mu.Unlock()
	return true
}

// close waits for a running group and refuses every later op (queued ops
// not yet taken fail too).
func (g *groupCommit[T]) close() {
	g.mu.Lock()
	g.closed = true
	for g.leading {
		g.idle.Wait()
	}
	g.mu.Unlock()
}
