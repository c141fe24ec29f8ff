//go:build unix

package a2acard

import "syscall"

// cpuTime is the process's user and system CPU time in nanoseconds, all
// threads (the collector's included); 0 where it cannot be read.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
