//go:build !race

package amp

// raceDetector: the tests run without the race detector.
const raceDetector = false
