//go:build race

package jcs

// raceDetector: the tests run under the race detector, under which
// sync.Pool drops some of what is put in it, so the pooled big integers of
// internal/jsonnum are allocated again now and then; tests that count
// allocations of numbers rounded there skip that count.
const raceDetector = true
