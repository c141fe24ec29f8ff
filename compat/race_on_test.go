//go:build race

package compat

// raceDetector: the tests run under the race detector, many times slower;
// tests that bound time skip.
const raceDetector = true
