//go:build race

package amp

// raceDetector: the tests run under the race detector, whose
// instrumentation allocates; tests that bound allocations as a multiple of
// the input skip that bound.
const raceDetector = true
