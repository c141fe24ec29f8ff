//go:build !race

package testalloc

// Race reports whether the tests run under the race detector (see
// race_on.go).
const Race = false
