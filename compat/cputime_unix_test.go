//go:build unix

package compat

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used.
// The budget benchmark reports it per unit: on a shared machine it
// moves far less than wall-clock time.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
