package bundlebuild

import (
	"encoding/hex"
	"runtime"
	"slices"
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

// buildWorkers returns the number of workers a build uses: n, or
// GOMAXPROCS when n is 0 or less, at most maxBuildWorkers.
func buildWorkers(n int) int {
	limit.Default(&n, runtime.GOMAXPROCS(0))
	return min(max(n, 1), maxBuildWorkers)
}

// byteBudget bounds the bytes charged to the items in flight. An item is
// admitted when its first charge fits with the others (or alone, when it
// is larger than the whole budget), and grows its charge before it
// allocates what the growth is for, waiting while it holds what it has:
// what an item holds is charged while it waits, so the bytes charged, and
// the heap they stand for, never exceed max(budget, one charge). When every
// item holding a charge waits to grow and none fits, the youngest (highest
// index) is preempted: its wait fails, it drops what it holds and starts
// again later (runCharged), so no two items wait on each other and the
// oldest always goes on. A preempted item starts again only once every
// item older than it has finished: it is then the oldest item left, never
// preempted again, so each item runs at most twice (BUILD-2, amended in
// review 117). No item is admitted while another waits to grow.
type byteBudget struct {
	mu      sync.Mutex
	cond    sync.Cond
	used    int64
	max     int64
	holders int       // items holding a charge (admitted, not yet released)
	blocked []*charge // holders waiting to grow
	// oldest is the lowest item not yet finished; finished holds the
	// items above it that have finished (at most the pool's window).
	oldest   int
	finished map[int]bool
	stopped  bool
	hook     func(used, budget int64)
	// follow, when set, is told the bytes charged each time they change
	// (memoryLimit.follow).
	follow func(used int64)
}

func newByteBudget(max int64, hook func(used, budget int64)) *byteBudget {
	b := &byteBudget{max: max, hook: hook, finished: map[int]bool{}}
	b.cond.L = &b.mu
	return b
}

// charge is what one item (its index in the pool) holds of a byteBudget.
type charge struct {
	b         *byteBudget
	item      int
	n         int64
	held      bool // admitted and not released
	want      int64
	preempted bool // chosen to drop what it holds and start again
	rerun     bool // a run after a preemption: admitted once every older item has finished
}

// to makes the item's charge n: its first charge waits, holding nothing,
// until n fits; a later one grows (or shrinks) what the item holds,
// waiting for the difference while it keeps what it has. It returns false
// once the budget is stopped or the item is preempted; the item must then
// return, and what it holds is released with it.
func (c *charge) to(n int64) bool {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if !c.held {
		return b.admit(c, n)
	}
	return b.grow(c, n)
}

// admit takes an item's first charge (b.mu held).
func (b *byteBudget) admit(c *charge, n int64) bool {
	for !b.stopped && (c.rerun && b.oldest < c.item || len(b.blocked) > 0 || b.used > 0 && b.used+n > b.max) {
		b.cond.Wait()
	}
	if b.stopped {
		return false
	}
	b.used += n
	b.holders++
	c.n, c.held = n, true
	b.took()
	return true
}

// grow changes the charge of an item that holds one (b.mu held).
func (b *byteBudget) grow(c *charge, n int64) bool {
	if b.stopped || c.preempted {
		return false
	}
	if n <= c.n {
		b.used -= c.n - n
		c.n = n
		b.changed()
		b.cond.Broadcast()
		return true
	}
	c.want = n
	if !b.fits(c) {
		b.blocked = append(b.blocked, c)
		b.resolve()
		for !b.stopped && !c.preempted && !b.fits(c) {
			b.cond.Wait()
		}
		b.unblock(c)
		if b.stopped || c.preempted {
			return false
		}
	}
	b.used += n - c.n
	c.n = n
	b.took()
	return true
}

// fits reports whether c may grow to c.want now: it fits with the others,
// or no other item holds anything (b.mu held).
func (b *byteBudget) fits(c *charge) bool {
	others := b.used - c.n
	return others == 0 || others+c.want <= b.max
}

// unblock removes c from the items waiting to grow (b.mu held).
func (b *byteBudget) unblock(c *charge) {
	if i := slices.Index(b.blocked, c); i >= 0 {
		b.blocked = slices.Delete(b.blocked, i, i+1)
	}
}

// resolve preempts the youngest waiting item when every holder waits to
// grow and none fits: nothing else would ever release bytes (b.mu held).
func (b *byteBudget) resolve() {
	defer b.cond.Broadcast()
	if len(b.blocked) == 0 || len(b.blocked) < b.holders {
		return
	}
	youngest := b.blocked[0]
	for _, g := range b.blocked {
		if b.fits(g) {
			return // it goes on once woken
		}
		if g.item > youngest.item {
			youngest = g
		}
	}
	youngest.preempted = true
	b.unblock(youngest)
}

// took reports a charge taken to the hook (b.mu held).
func (b *byteBudget) took() {
	b.changed()
	if b.hook != nil {
		b.hook(b.used, b.max)
	}
}

// changed tells follow the bytes charged (b.mu held).
func (b *byteBudget) changed() {
	if b.follow != nil {
		b.follow(b.used)
	}
}

// release gives back what c holds, once its item has returned, and
// reports whether the item was preempted (and must start again); an item
// not preempted has finished.
func (b *byteBudget) release(c *charge) (preempted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.held {
		b.used -= c.n
		b.holders--
		c.n, c.held = 0, false
		b.changed()
	}
	b.unblock(c)
	if !c.preempted {
		b.finished[c.item] = true
		for b.finished[b.oldest] {
			delete(b.finished, b.oldest)
			b.oldest++
		}
	}
	b.resolve()
	return c.preempted
}

func (b *byteBudget) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// runCharged runs work(i, c) for every i in [0, n) on up to workers
// goroutines, and hands each result to consume on the calling goroutine
// in the order of i. Item i starts only once its cost fits in the budget
// b with the charges of the items in flight; work then grows its item's
// charge (charge.to) before it allocates what the growth is for, and the
// item holds what work last set until it returns. Each worker takes its
// item's first charge itself, after it has the item, holding nothing
// while it waits; an item preempted while it waits to grow (byteBudget)
// is run again from the start, so an item's result is that of one whole
// run. At most 2 × workers results wait for consume, so memory stays
// bounded whatever n. It stops at the first error consume returns and
// returns it once every item started has finished: nothing of it runs
// after it returns, by a panic of consume too. With one worker it runs the
// items in order on the calling goroutine.
func runCharged[R any](workers, n int, b *byteBudget, cost func(int) int64, work func(int, *charge) R, consume func(int, R) error) error {
	if workers = min(workers, n); workers <= 1 {
		for i := 0; i < n; i++ {
			r, _ := runItem(b, i, cost, work)
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
	// Stopped and waited for however consume returns, a panic included
	// (an embedder's progress callback): nothing of the pool runs, nor
	// moves the soft memory limit, once runCharged has returned.
	defer func() {
		close(done)
		b.stop()
		wg.Wait()
	}()
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
				if r, ok := runItem(b, i, cost, work); ok {
					results[i] <- r
				} // else stopped: no one waits for the result
			}
		}()
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		err = consume(i, <-results[i])
		<-window
	}
	return err
}

// runItem runs work on item i under a charge of b, from the start again
// when the item is preempted (once every older item has finished: at
// most once), and releases the charge after each run. ok is false when
// the budget stopped before the item was admitted.
func runItem[R any](b *byteBudget, i int, cost func(int) int64, work func(int, *charge) R) (r R, ok bool) {
	for rerun := false; ; rerun = true {
		c := &charge{b: b, item: i, rerun: rerun}
		if !c.to(cost(i)) {
			return r, false
		}
		r = work(i, c)
		if !b.release(c) {
			return r, true
		}
	}
}

// firstRead is what a worker keeps of one schema's first read: its size
// and hash, and the quick check's parse of it (the bytes are dropped).
type firstRead struct {
	size int64
	sum  []byte
	prep *offlineschema.Prepared
	err  error      // the file could not be read
	over *amp.Error // the compile's refusal of it, over a per-document limit, unparsed
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
	cost := func(i int) int64 { return schemas.dir.listedSize(keys[i]) } // the bytes readListed may read
	work := func(i int, c *charge) firstRead {
		k := keys[i]
		data, err := schemas.dir.readListed(k, maxSchemaFile)
		if err != nil {
			return firstRead{err: err}
		}
		// Cheap refusals first: a document over a per-document compile
		// limit is refused from one scan of its bytes, never parsed.
		s := structure(data)
		if e := compileRefusalUnparsed(k, data, s); e != nil {
			return firstRead{over: e}
		}
		if !c.to(treeHeapBound(int64(len(data)), s)) { // before the parse
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
		if r.over != nil {
			return srcErr(k, "%s", r.over.Message).WithCause(r.over)
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
	cost := func(int) int64 { return 0 } // each document a compile loads is charged before it is read
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
