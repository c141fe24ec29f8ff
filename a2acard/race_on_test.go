//go:build race

package a2acard

// raceDetector: the tests run under the race detector, whose
// instrumentation allocates (math/big's number rounding of
// internal/jcs among others); tests that bound allocations as a multiple
// of the input skip that bound.
const raceDetector = true
