//go:build linux && (mips || mipsle || mips64 || mips64le || sparc64)

package main

import "os"

// stackFaultSignal: these architectures have no SIGSTKFLT.
func stackFaultSignal() []os.Signal { return nil }
