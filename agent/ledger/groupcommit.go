package ledger

import "sync"

// groupCommit is the leader-based group committer both durable stores
// use: the first caller to find no group running takes what is queued (as
// much as take allows, at least one) and runs it itself; callers arriving
// meanwhile wait and are run together by the next leader. There is no
// committer goroutine, and a caller returns only once the group holding
// its op has run.
type groupCommit[T any] struct {
	mu       sync.Mutex
	cond     *sync.Cond
	queue    []T
	queued   uint64 // ops ever queued
	finished uint64 // ops whose group ran (the queue is FIFO)
	leading  bool
	closed   bool
}

func newGroupCommit[T any]() *groupCommit[T] {
	g := &groupCommit[T]{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// do queues op and returns true once a group holding it ran, false when
// the committer was closed before. take returns how many of the queued ops
// (oldest first) the next group holds; run runs one group.
func (g *groupCommit[T]) do(op T, take func(queued []T) int, run func(group []T)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.queue = append(g.queue, op)
	g.queued++
	mine := g.queued
	for g.finished < mine {
		if g.leading {
			g.cond.Wait()
			continue
		}
		if g.closed {
			return false
		}
		g.leading = true
		n := min(max(take(g.queue), 1), len(g.queue))
		group := append([]T(nil), g.queue[:n]...)
		g.queue = append(g.queue[:0], g.queue[n:]...)
		g.mu.Unlock()
		run(group)
		g.mu.Lock()
		g.finished += uint64(n)
		g.leading = false
		g.cond.Broadcast()
	}
	return true
}

// close waits for a running group and refuses every later op (queued ops
// not yet taken fail too).
func (g *groupCommit[T]) close() {
	g.mu.Lock()
	for g.leading {
		g.cond.Wait()
	}
	g.closed = true
	g.cond.Broadcast()
	g.mu.Unlock()
}
