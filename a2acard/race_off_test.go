//go:build !race

package a2acard

// raceDetector: the tests run without the race detector.
const raceDetector = false
