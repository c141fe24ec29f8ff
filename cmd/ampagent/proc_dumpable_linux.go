//go:build linux

package main

import "golang.org/x/sys/unix"

// init makes the agent's process not dumpable (prctl PR_SET_DUMPABLE 0)
// before any command runs. A handler program runs as the agent's own
// user: where Yama's ptrace_scope is 0 or Yama is absent, it could attach
// to the agent with ptrace or read its memory (process_vm_readv,
// /proc/PID/mem), the decrypted signing key in it; a process that is not
// dumpable is open to that only for a tracer with CAP_SYS_PTRACE. It
// also writes no core file (the key in it), and its /proc/PID files are
// root's: it reads its own still (/proc/self/exe, the reaper's binary;
// /proc/self/fd), as the kernel lets a process into its own entries
// whatever their owner. Set for every command, not serve's alone: mcp
// runs handler programs, invoke and keygen hold a key. The reaper, the
// same binary run again, sets it too (exec made it dumpable again); the
// programs it runs are dumpable as any (CLI-49).
func init() {
	// It fails only for an argument the kernel does not know.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
