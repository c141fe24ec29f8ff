//go:build !race

package offlineschema

// victimSlowdown is how much slower a victim child runs in this build
// (victimLimit): 1 without the race detector.
const victimSlowdown = 1
