//go:build race

package testalloc

// Race reports whether the tests run under the race detector, whose
// instrumentation allocates (and makes sync.Pool drop what is put in it)
// and slows work several times over: tests that bound allocations or
// heap growth as a multiple of their input do not judge that bound under
// it; the plain go test run does.
const Race = true
