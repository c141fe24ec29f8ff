package etcdledger

import "sync"

// batchQueue is the queue of a group commit (the combined writes of
// combiner, the combined reads of reader: docs/SPEC-DECISIONS.md FLEET-10,
// FLEET-12): callers queue their requests, and up to a bound of flights
// (goroutines) each take the next batch off the queue and answer it, one
// batch after another, until none waits. While one flight waits for etcd,
// the next gathers the requests that arrive meanwhile.
type batchQueue[T any] struct {
	mu      sync.Mutex
	q       []T
	flights int
}

// add queues x and reports whether fewer than limit flights ran: then it
// counts one more, which the caller starts (go b.run(take, answer)).
func (b *batchQueue[T]) add(x T, limit int) (start bool) {
	b.mu.Lock()
	b.q = append(b.q, x)
	if start = b.flights < limit; start {
		b.flights++
	}
	b.mu.Unlock()
	return start
}

// run is a flight: it answers the waiting requests, a batch at a time,
// until none waits. take is called with mu held (it removes the next
// batch from q, in order), answer without it.
func (b *batchQueue[T]) run(take func() []T, answer func([]T)) {
	for {
		b.mu.Lock()
		batch := take()
		if len(batch) == 0 {
			b.q = nil
			b.flights--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		answer(batch)
	}
}
