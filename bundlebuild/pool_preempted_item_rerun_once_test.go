package bundlebuild

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestPreemptedSchemaIsCheckedAgainAtMostOnce: when every item holding a
// charge waits to grow and none fits, the youngest is preempted and run
// again from the start (BUILD-2, as amended). It was admitted again as
// soon as no item waited to grow, beside the very items it had made way
// for, and was preempted again at their next growth: a compile that loads
// a thousand documents, older than a young one, could have the young one
// re-run, from its start, once for each of its loads (threat: a source
// folder whose schemas reference many documents making a build redo its
// checks without a bound it can state, the work of every schema
// multiplied by the growths of the schemas before it). Expected: an item
// preempted starts again only once every older item has finished, so it
// is never preempted twice and each schema is checked at most twice. Here
// 16 items on 8 workers each grow in 40 steps of 1 to 40 against a budget
// of 64, in 20 rounds; no item may run more than twice.
func TestPreemptedSchemaIsCheckedAgainAtMostOnce(t *testing.T) {
	const n, workers, steps, budget, rounds = 16, 8, 40, 64, 20
	for round := range rounds {
		var runs [n]atomic.Int32
		work := func(i int, c *charge) int {
			runs[i].Add(1)
			for g := int64(2); g <= steps; g++ {
				if !c.to(g) {
					return -1
				}
				runtime.Gosched()
			}
			return i
		}
		done := make(chan error, 1)
		go func() {
			done <- runCharged(workers, n, newByteBudget(budget, nil), func(int) int64 { return 1 }, work, func(i, r int) error {
				if r != i {
					t.Errorf("round %d: result %d is %d", round, i, r)
				}
				return nil
			})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: the pool did not finish", round)
		}
		for i := range n {
			if r := runs[i].Load(); r > 2 {
				t.Fatalf("round %d: item %d ran %d times (preempted %d times): a preempted item was admitted again beside the older items it made way for",
					round, i, r, r-1)
			}
		}
	}
}
