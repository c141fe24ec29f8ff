//go:build race

package offlineschema

// victimSlowdown is how much slower a victim child runs in this build: the
// race detector makes these CPU-bound runs about ten times slower, the
// defended path and the undefended one alike, so their limits scale with it
// (victimLimit).
const victimSlowdown = 10
