package bundlebuild

import (
	"encoding/hex"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// The schema checks of a build run on a pool of workers (docs/PERFORMANCE.md,
// P8): each schema is read, hashed, parsed and walked on one worker, and
// the results are taken in the sorted order of the keys on the calling
// goroutine, where everything that depends on the other schemas is done.
// The build is therefore the same, byte for byte and error for error,
// whatever the number of workers: the first error reported is the one of
// the lowest-sorted key, as with one worker.

// maxBuildWorkers bounds SourceOptions.Workers.
const maxBuildWorkers = 1024

// buildHooks are the test hooks of a build: the in-flight budget and a
// look at it. The zero value is the production setting.
type buildHooks struct {
	// budget, when positive, replaces the default budget of heap bytes
	// charged to the schemas in flight (inFlightBudget).
	budget int64
	// inFlight, when set, is called each time a charge is taken, with
	// the bytes then charged (that charge included) and the budget.
	inFlight func(used, budget int64)
	// maxFiles, when positive, replaces maxSourceFiles.
	maxFiles int
}

// Memory of a build (docs/PERFORMANCE.md, P8): the target peak RSS is
// 64 MiB + 4 × the largest schema × workers. On a base of about 32 MiB
// (runtime, the output's buffers, the index of every schema), the heap
// of the schemas in flight — each charged a bound of its parse tree, and
// of its compile where it is compiled (heapcharge.go) — is bounded so
// that it fits in the target less what the process holds beyond the Go
// heap, and the ampbundle command holds the collector to the target
// (SourceOptions.LimitMemory).
const (
	memTargetBase = 64 << 20
	memBase       = 32 << 20
	// memNotHeap is what the process's RSS holds beyond the memory the Go
	// runtime manages (the program's text and data): the soft memory
	// limit is the target less this.
	memNotHeap    = 16 << 20
	memPerLargest = 4
)

// inFlightBudget returns the bytes of heap the schemas a build with
// workers workers holds in flight may be charged — the target peak RSS
// less memBase and memNotHeap — and that target. One schema charged
// more than the whole budget is admitted alone.
func inFlightBudget(workers int, largest int64) (budget, target int64) {
	largest = max(largest, 1)
	target = memTargetBase + memPerLargest*largest*int64(workers)
	return target - memBase - memNotHeap, target
}

// holdMemoryLimit lowers the soft memory limit to target (less
// memNotHeap), when that is lower than the limit in force, and returns
// what restores it.
func holdMemoryLimit(target int64) func() {
	prev := debug.SetMemoryLimit(-1)
	if target-memNotHeap >= prev {
		return func() {}
	}
	debug.SetMemoryLimit(target - memNotHeap)
	return func() { debug.SetMemoryLimit(prev) }
}

// buildWorkers returns the number of workers a build uses: n, or
// GOMAXPROCS when n is 0 or less, at most maxBuildWorkers.
func buildWorkers(n int) int {
	limit.Default(&n, runtime.GOMAXPROCS(0))
	return min(max(n, 1), maxBuildWorkers)
}

// byteBudget bounds the bytes charged to the items in flight. A charge is
// taken when it fits with the others, or alone when it is larger than the
// whole budget: the bytes charged never exceed max(budget, one charge).
type byteBudget struct {
	mu      sync.Mutex
	cond    sync.Cond
	used    int64
	max     int64
	stopped bool
	hook    func(used, budget int64)
}

func newByteBudget(max int64, hook func(used, budget int64)) *byteBudget {
	b := &byteBudget{max: max, hook: hook}
	b.cond.L = &b.mu
	return b
}

// acquire waits until n bytes fit and takes them; false once stopped.
func (b *byteBudget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.stopped && b.used > 0 && b.used+n > b.max {
		b.cond.Wait()
	}
	if b.stopped {
		return false
	}
	b.used += n
	if b.hook != nil {
		b.hook(b.used, b.max)
	}
	return true
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *byteBudget) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// charge is what one item holds of a byteBudget.
type charge struct {
	b *byteBudget
	n int64
}

// to makes the item's charge n: it releases what the item holds, then
// waits until n fits. An item never waits while it holds a charge, so no
// two items wait on each other, and one larger than the budget waits
// until it is alone. It returns false, holding nothing, once the budget
// is stopped.
func (c *charge) to(n int64) bool {
	c.b.release(c.n)
	c.n = 0
	if !c.b.acquire(n) {
		return false
	}
	c.n = n
	return true
}

// runCharged runs work(i, c) for every i in [0, n) on up to workers
// goroutines, and hands each result to consume on the calling goroutine
// in the order of i. Item i starts only once its cost fits in the budget
// b with the charges of the items in flight; work may then change its
// item's charge (charge.to) once it knows more of what the item costs,
// and the item holds what work last set until it returns. Each worker
// takes its item's charge itself, after it has the item, so that nothing
// waits for the budget while it holds a charge. At most 2 × workers
// results wait for consume, so memory stays bounded whatever n. It stops
// at the first error consume returns and returns it once every item
// started has finished: nothing of it runs after it returns. With one
// worker it runs the items in order on the calling goroutine.
func runCharged[R any](workers, n int, b *byteBudget, cost func(int) int64, work func(int, *charge) R, consume func(int, R) error) error {
	if workers = min(workers, n); workers <= 1 {
		for i := 0; i < n; i++ {
			c := &charge{b: b}
			c.to(cost(i))
			r := work(i, c)
			b.release(c.n)
			if err := consume(i, r); err != nil {
				return err
			}
		}
		return nil
	}
	results := make([]chan R, n)
	for i := range results {
		results[i] = make(chan R, 1)
	}
	jobs := make(chan int)
	window := make(chan struct{}, 2*workers)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1 + workers)
	go func() { // the dispatcher: items in order, at most 2 × workers ahead of consume
		defer wg.Done()
		defer close(jobs)
		for i := 0; i < n; i++ {
			select {
			case window <- struct{}{}:
			case <-done:
				return
			}
			select {
			case jobs <- i:
			case <-done:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			for i := range jobs {
				c := &charge{b: b}
				if !c.to(cost(i)) {
					continue // stopped: no one waits for the result
				}
				r := work(i, c)
				b.release(c.n)
				results[i] <- r
			}
		}()
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		err = consume(i, <-results[i])
		<-window
	}
	close(done)
	b.stop()
	wg.Wait()
	return err
}

// firstRead is what a worker keeps of one schema's first read: its size
// and hash, and the quick check's parse of it (the bytes are dropped).
type firstRead struct {
	size int64
	sum  []byte
	prep *offlineschema.Prepared
	err  error // the file could not be read
}

// indexSchemas reads, hashes and parses every schema of the source (keys,
// sorted) on the workers, and adds them to quick in the order of keys:
// their hashes to schemas.hashes, their $ids to schemas.ids. It returns
// the size and hash of the bytes checked, by key.
func indexSchemas(keys []string, schemas *diskLoader, sizes map[string]int64, quick *offlineschema.QuickCheck,
	workers int, b *byteBudget, progress func(string, int64, int64)) (map[string]bundle.Source, error) {
	var total, done int64
	for _, k := range keys {
		total += sizes[k]
	}
	checked := map[string]bundle.Source{}
	cost := func(i int) int64 { return sizes[keys[i]] } // the bytes it reads
	work := func(i int, c *charge) firstRead {
		k := keys[i]
		data, err := schemas.dir.read(k, maxSchemaFile)
		if err != nil {
			return firstRead{err: err}
		}
		if !c.to(schemaHeapBound(data)) { // before the parse
			return firstRead{err: errBuildStopped}
		}
		h, _ := bundle.NewHash(schemas.alg)
		h.Write(data)
		return firstRead{size: int64(len(data)), sum: h.Sum(nil), prep: offlineschema.Prepare(k, data)}
	}
	consume := func(i int, r firstRead) error {
		k := keys[i]
		if r.err != nil {
			return srcErr(k, "cannot be read").WithCause(r.err)
		}
		schemas.hashes[k] = hex.EncodeToString(r.sum)
		checked[k] = bundle.Source{Size: r.size, Hash: r.sum}
		id, err := quick.Commit(r.prep)
		done += r.size
		progress("indexing schemas", done, total)
		if err != nil {
			return srcErr(k, "is not a json schema object").WithCause(err)
		}
		if id == "" {
			return nil
		}
		if other, dup := schemas.ids[id]; dup {
			return srcErr(k, "has the same $id as %s", other)
		}
		schemas.ids[id] = k
		return nil
	}
	return checked, runCharged(workers, len(keys), b, cost, work, consume)
}

// checkSchemas resolves every schema's references and compiles, on the
// workers, each schema the quick check cannot vouch for (every schema with
// full). The first error in the order of keys is returned.
func checkSchemas(keys []string, schemas *diskLoader, sizes map[string]int64, quick *offlineschema.QuickCheck, full bool,
	workers int, b *byteBudget, progress func(string, int64, int64)) error {
	var total, done int64
	for _, k := range keys {
		total += sizes[k]
	}
	if !full {
		quick.Resolve(schemas) // then Check is safe for concurrent use
	}
	cost := func(i int) int64 { return sizes[keys[i]] }
	work := func(i int, c *charge) error {
		l := chargedLoader{schemas, c} // each document a compile loads is charged
		if full {
			_, err := offlineschema.Compile(l, keys[i], offlineschema.Options{})
			return err
		}
		return quick.Check(l, keys[i], offlineschema.Options{})
	}
	consume := func(i int, err error) error {
		if err != nil {
			e := amp.AsError(err)
			return srcErr(keys[i], "%s", e.Message).WithCause(err)
		}
		done += sizes[keys[i]]
		progress("checking schemas", done, total)
		return nil
	}
	return runCharged(workers, len(keys), b, cost, work, consume)
}
