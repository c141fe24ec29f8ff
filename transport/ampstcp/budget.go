package ampstcp

import "sync"

// budget counts bytes in flight under a cap. acquire waits, in arrival
// order, until its charge fits (first come, first served: a large message
// is not starved by a stream of small ones); force charges without waiting
// (a reply larger than its request: the count may then pass the cap, and
// nothing new is admitted until it is back under). The waiters are the
// connections' read loops, at most one each, so the queue is bounded by the
// connection cap.
type budget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newBudget(max int64) *budget { return &budget{max: max} }

// fits reports whether n more bytes fit; a charge always fits when nothing
// is held, so a message of the largest size always makes progress.
func (b *budget) fits(n int64) bool { return b.used == 0 || b.used+n <= b.max }

// acquire charges n, waiting while it does not fit. It gives up (false,
// nothing charged) when stop is closed first.
func (b *budget) acquire(n int64, stop <-chan struct{}) bool {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.fits(n) {
		b.used += n
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-stop:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted meanwhile: give it back.
		b.used -= n
	default:
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grant()
	return false
}

// force charges n without waiting.
func (b *budget) force(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// release gives n back and admits the waiters that now fit, in order.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant admits waiters from the head of the queue while they fit.
func (b *budget) grant() {
	for len(b.waiters) > 0 && b.fits(b.waiters[0].n) {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// inUse is the charge held now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
