//go:build !race

package jcs

// raceDetector: the tests run without the race detector.
const raceDetector = false
