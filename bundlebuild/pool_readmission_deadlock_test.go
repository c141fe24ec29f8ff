package bundlebuild

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolReadmissionCannotDeadlock: a schema learns its true charge only
// once it is read, and a compile each time it loads a document; items
// that grow past the budget together, each holding its charge while it
// waits for more, must not wait on each other for ever (the youngest is
// preempted and run again), nor may the charges in flight ever exceed
// max(budget, one charge). Items of 1 byte grow to 6 and then to 9 (two
// never fit in 10 together) and one to 25, on 8 workers; the pool must
// finish, in order, within the budget.
func TestPoolReadmissionCannotDeadlock(t *testing.T) {
	const n = 64
	var running, peak, over atomic.Int64
	b := newByteBudget(10, func(used, _ int64) {
		for p := peak.Load(); used > p && !peak.CompareAndSwap(p, used); p = peak.Load() {
		}
		if used > 10 && used != 25 { // only the 25-byte item, alone, may exceed the budget
			over.Store(used)
		}
	})
	work := func(i int, c *charge) int {
		grow := []int64{6, 9}
		if i == 17 {
			grow = []int64{6, 25}
		}
		for _, g := range grow {
			if !c.to(g) {
				return -1
			}
			running.Add(1)
			time.Sleep(50 * time.Microsecond)
			running.Add(-1)
		}
		return i
	}
	done := make(chan error, 1)
	var got []int
	go func() {
		done <- runCharged(8, n, b, func(int) int64 { return 1 }, work, func(i, r int) error {
			got = append(got, r)
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pool deadlocked: items growing past the budget wait on each other")
	}
	for i, r := range got {
		if r != i {
			t.Fatalf("result %d is %d", i, r)
		}
	}
	if len(got) != n || peak.Load() > 25 || over.Load() != 0 {
		t.Fatalf("%d results, peak charge %d, %d charged at once beside another (budget 10, one item at most 25)",
			len(got), peak.Load(), over.Load())
	}
}
