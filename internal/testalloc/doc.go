// Package testalloc is the one way the module's tests measure the bytes
// a piece of work allocates, for a test that bounds them.
//
// runtime.MemStats.TotalAlloc counts the whole process: a goroutine
// another test left behind, a parallel subtest, the race detector or the
// runtime itself can add to one run of the work, never take from it. A
// bound checked on one run can therefore fail on a loaded machine with
// the code under test unchanged. Least and LeastPerRun take the least of
// Runs runs, each after runtime.GC twice, so that what the work itself
// allocates on every run is counted and another goroutine's bytes must
// land in every run to count; Within runs the work again only when one
// run is over a bound. This holds only for work that is the same
// on every run: work whose first run fills a cache, consumes its input
// or changes a store is measured once, with Bytes, or not through this
// package.
//
// Race says whether the race detector instruments the build, under
// which such bounds are not judged (one constant for every package's
// tests).
//
// It holds no state, and it is imported by tests only (deps_test.go at
// the repository root keeps it so).
package testalloc
