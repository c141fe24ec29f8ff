//go:build !unix

package a2acard

// cpuTime is not read on this system: the benchmark reports no CPU time.
func cpuTime() int64 { return 0 }
