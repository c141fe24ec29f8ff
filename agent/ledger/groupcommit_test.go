package ledger

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recordingCommitter is a groupCommit over ints whose groups are
// recorded; run blocks while hold is set.
type recordingCommitter struct {
	g      *groupCommit[int]
	mu     sync.Mutex
	groups [][]int
}

func newRecordingCommitter(active func() int, gather time.Duration) *recordingCommitter {
	r := &recordingCommitter{}
	r.g = newGroupCommit(func(q []int) int { return len(q) }, func(group []int) {
		r.mu.Lock()
		r.groups = append(r.groups, append([]int(nil), group...))
		r.mu.Unlock()
	})
	r.g.active, r.g.gather = active, gather
	return r
}

func (r *recordingCommitter) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n []int
	for _, g := range r.groups {
		n = append(n, len(g))
	}
	return n
}

// TestGroupCommitGathersWritersOnTheirWay: with more writers expected
// than the processors need to stay busy, the queue waits for them: 40
// writers that arrive one by one are written as one group (one
// fdatasync), not forty.
func TestGroupCommitGathersWritersOnTheirWay(t *testing.T) {
	const writers = 40
	r := newRecordingCommitter(func() int { return writers + computing*runtime.GOMAXPROCS(0) }, time.Minute)
	var wg sync.WaitGroup
	var acked atomic.Int64
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.g.do(i) {
				acked.Add(1)
			}
		}()
		time.Sleep(100 * time.Microsecond) // one by one
		if i < writers-1 && len(r.sizes()) > 0 {
			t.Fatalf("a group ran with %d of %d writers queued", i+1, writers)
		}
	}
	wg.Wait()
	if got := r.sizes(); len(got) != 1 || got[0] != writers || acked.Load() != writers {
		t.Fatalf("groups %v, %d acknowledged; want one group of %d", got, acked.Load(), writers)
	}
}

// TestGroupCommitNeverWaitsPastMaxGather: when the writers expected never
// come (a count that is wrong, or handlers slower than thought), the
// oldest op runs once its gathering time is up, not later.
func TestGroupCommitNeverWaitsPastMaxGather(t *testing.T) {
	const gather = 30 * time.Millisecond
	r := newRecordingCommitter(func() int { return 1000 }, gather)
	start := time.Now()
	if !r.g.do(1) {
		t.Fatal("not done")
	}
	took := time.Since(start)
	if took < gather || took > gather+2*time.Second {
		t.Fatalf("one op took %v with a gathering time of %v", took, gather)
	}
	if got := r.sizes(); len(got) != 1 {
		t.Fatalf("groups %v", got)
	}
}

// TestGroupCommitFewWritersRunAtOnce: an agent that is not loaded pays no
// latency for gathering: with no more writers expected than keep the
// processors busy, or with no count at all (a store used directly),
// every op runs at once.
func TestGroupCommitFewWritersRunAtOnce(t *testing.T) {
	for name, active := range map[string]func() int{
		"few writers": func() int { return computing * runtime.GOMAXPROCS(0) },
		"no count":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			r := newRecordingCommitter(active, time.Minute)
			for i := 0; i < 5; i++ {
				start := time.Now()
				r.g.do(i)
				if took := time.Since(start); took > 10*time.Second {
					t.Fatalf("op %d waited %v", i, took)
				}
			}
			if got := r.sizes(); len(got) != 5 {
				t.Fatalf("groups %v, want five of one", got)
			}
		})
	}
}

// TestGroupCommitCloseFailsGatheringOps: an op waiting for others to join
// its group when the committer closes fails (false) instead of waiting
// forever or running after the close.
func TestGroupCommitCloseFailsGatheringOps(t *testing.T) {
	r := newRecordingCommitter(func() int { return 1000 }, time.Hour)
	done := make(chan bool)
	go func() { done <- r.g.do(1) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.g.mu.Lock()
		n := len(r.g.queue)
		r.g.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) || len(r.sizes()) > 0 {
			t.Fatalf("the op did not wait to gather (groups %v)", r.sizes())
		}
		time.Sleep(time.Millisecond)
	}
	r.g.close()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("an op reported done after the close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a gathering op outlived the close")
	}
	if r.g.do(2) || len(r.sizes()) != 0 {
		t.Fatalf("ran after close: %v", r.sizes())
	}
}

// TestLedgerCountsActiveWriters: the ledger tells its store how many
// writers to expect: tickets out, less those whose handler runs (it may
// run long, and must not hold the others' group back).
func TestLedgerCountsActiveWriters(t *testing.T) {
	c := newClock()
	l, _ := New(NewMemory(Limits{}), Options{Now: c.Now})
	start := func(i int) *Ticket {
		st, err := l.Start("did:key:zA", id(i), c.Now().Add(time.Hour))
		if err != nil || st.Ticket == nil {
			t.Fatal(st.State, err)
		}
		return st.Ticket
	}
	a, b, d := start(1), start(2), start(3)
	if n := l.active(); n != 3 {
		t.Fatalf("three tickets out: active %d", n)
	}
	if err := a.Running(); err != nil {
		t.Fatal(err)
	}
	if n := l.active(); n != 2 {
		t.Fatalf("one handler running: active %d", n)
	}
	a.Finish([]byte("r"))
	b.Abandon()
	if n := l.active(); n != 1 {
		t.Fatalf("after Finish and Abandon: active %d", n)
	}
	if err := d.Running(); err != nil {
		t.Fatal(err)
	}
	d.Abandon() // a running ticket abandoned: its handler's count ends too
	if n := l.active(); n != 0 {
		t.Fatalf("all ended: active %d", n)
	}
}
