//go:build unix

package agent

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time (user + system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports, after a benchmark loop started at start (cpuTime),
// the process CPU time per operation as "cpu-ns/op": on a machine shared
// with other work, wall-clock ns/op moves with the neighbours' load,
// CPU time much less (it still counts every thread of the process: the
// garbage collector, a woken idle core spinning, other goroutines).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
