package testalloc

import "runtime"

// Runs is how many runs of the work (rounds, for LeastPerRun) Least,
// LeastPerRun and Within take the least of.
const Runs = 3

// Bytes returns the bytes the process allocated while f ran once. Before
// f it runs runtime.GC twice: the second also empties sync.Pool's victim
// cache, so what f needs it allocates rather than takes from a pool an
// earlier run filled. The count is the whole process's; a bound on it is
// checked with Least, and Bytes is for work that cannot be run again (its
// result is logged, or compared with care).
func Bytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Least returns the least of Runs runs of Bytes(f), for an f that does the
// same work on each run: bytes another goroutine allocates during one run
// do not count unless they are allocated during every run, while bytes f
// allocates on every run always count. An f whose first run fills a cache
// the later runs use is not such an f: Least would measure the cached
// runs.
func Least(f func()) uint64 {
	least := Bytes(f)
	for range Runs - 1 {
		least = min(least, Bytes(f))
	}
	return least
}

// LeastPerRun returns the least, over Runs rounds, of the bytes allocated
// while f ran n times in a row, divided by n (rounded down, as
// testing.AllocsPerRun divides its count); an n below 1 is taken as 1.
// Each round starts as Bytes does; f is run n*Runs times in all, with no
// run before the first round, so as with Least an f whose first run
// fills a cache is measured warm.
func LeastPerRun(n int, f func()) uint64 {
	n = max(n, 1)
	round := func() {
		for range n {
			f()
		}
	}
	return Least(round) / uint64(n)
}

// Within returns the bytes f allocates, for a bound checked on work run
// many times over a large heap, where the two collections of each Bytes
// cost more than the work: it measures one run as it comes, with no
// collection before it (as a pool an earlier run filled may serve f), and
// only if that run allocated more than bound does it return the least of
// that run and of Least(f) (f is run once, or 1+Runs times). A bound
// checked on what it returns fails as a bound checked on Least(f) does
// when f allocates more than bound on every run.
func Within(bound uint64, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	a := after.TotalAlloc - before.TotalAlloc
	if a <= bound {
		return a
	}
	return min(a, Least(f))
}
