//go:build linux && !mips && !mipsle && !mips64 && !mips64le && !sparc64

package main

import (
	"os"
	"syscall"
)

// stackFaultSignal is SIGSTKFLT where Linux has one: Go's runtime ends a
// process on it with a stack dump unless it is caught (runReaper).
func stackFaultSignal() []os.Signal { return []os.Signal{syscall.SIGSTKFLT} }
