package bundlebuild

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestGrowingItemCannotPassBudgetWhileItWaits: a schema is admitted with
// the bytes it reads, then grows its charge to a bound of its parse tree,
// and a compile grows it again for each document it loads; what the item
// holds stays allocated while it waits to grow. The pool once released
// an item's charge while it waited, so others were admitted into room
// still taken by the waiting items' bytes, and the heap passed the budget
// by what every waiting item held. Here each of 64 items on 8 workers
// allocates what it is granted (1, then 5, then 9 against a budget of 10)
// and keeps it until it returns; the bytes allocated at once must never
// exceed the budget, and the pool must finish, in order.
func TestGrowingItemCannotPassBudgetWhileItWaits(t *testing.T) {
	const n, budget = 64, 10
	var live, peak atomic.Int64
	allocate := func(d int64) {
		now := live.Add(d)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
	}
	work := func(i int, c *charge) int {
		held := int64(1) // the first charge, allocated
		allocate(held)
		defer func() { allocate(-held) }()
		for _, g := range []int64{5, 9} {
			if !c.to(g) {
				return -1
			}
			allocate(g - held)
			held = g
			for range 20 {
				runtime.Gosched()
			}
		}
		return i
	}
	done := make(chan error, 1)
	var got []int
	go func() {
		done <- runCharged(8, n, newByteBudget(budget, nil), func(int) int64 { return 1 }, work, func(i, r int) error {
			got = append(got, r)
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the pool did not finish: growing items wait on each other")
	}
	for i, r := range got {
		if r != i {
			t.Fatalf("result %d is %d", i, r)
		}
	}
	if len(got) != n || peak.Load() > budget {
		t.Fatalf("%d results; %d bytes allocated at once against a budget of %d", len(got), peak.Load(), budget)
	}
}
