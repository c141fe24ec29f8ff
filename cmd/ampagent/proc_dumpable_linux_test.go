//go:build linux

package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memoryProbeArg0 is argv[0] of the test binary run as a handler program
// that reads the agent's memory (probeAgentMemory).
const memoryProbeArg0 = "ampagent-test memory-probe"

func init() {
	if len(os.Args) == 4 && os.Args[0] == memoryProbeArg0 {
		fmt.Println(probeAgentMemory(os.Args[1], os.Args[2], os.Args[3]))
		syscall.Exit(0)
	}
}

// probeAgentMemory is a hostile handler program: it reads n bytes at addr
// in process pid (the agent) with process_vm_readv, which the kernel
// allows as it allows a ptrace attach, and answers {"read": HEX} or
// {"refused": ERRNO}. Run as root (this repository's tests), it first
// drops CAP_SYS_PTRACE from its effective set, as a program of an
// unprivileged agent user lacks it (it keeps it permitted: the kernel
// refuses a tracer whose permitted set is not the target's superset).
func probeAgentMemory(pidText, addrText, nText string) string {
	runtime.LockOSThread() // capabilities are a thread's
	pid, _ := strconv.Atoi(pidText)
	addr, _ := strconv.ParseUint(addrText, 10, 64)
	n, _ := strconv.Atoi(nText)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	caps[0].Effective &^= 1 << unix.CAP_SYS_PTRACE
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	buf := make([]byte, n)
	local := unix.Iovec{Base: &buf[0]}
	local.SetLen(n)
	_, err := unix.ProcessVMReadv(pid, []unix.Iovec{local},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: n}}, 0)
	if err != nil {
		return fmt.Sprintf(`{"refused": %q}`, unix.ErrnoName(err.(syscall.Errno)))
	}
	return fmt.Sprintf(`{"read": %q}`, hex.EncodeToString(buf))
}

// TestHandlerProgramCannotReadTheAgentsMemory: attack: a handler program
// runs as the agent's own user, and where Yama's ptrace_scope is 0 or
// Yama is absent (this host) the kernel let it read the agent's memory
// (process_vm_readv, a ptrace attach, /proc/PID/mem): the decrypted
// signing key, here a secret the test holds. The agent is not dumpable
// (PR_SET_DUMPABLE 0, set before any command runs): only a tracer with
// CAP_SYS_PTRACE reads it. The control makes the test process dumpable
// for one probe: a host that refuses that probe too (Yama 1 or more)
// shows nothing, and the test is skipped (CLI-49).
func TestHandlerProgramCannotReadTheAgentsMemory(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("decrypted-signing-key-7c41e0d2")
	probe := func() map[string]any {
		t.Helper()
		h := execHandler{Command: []string{memoryProbeArg0, strconv.Itoa(os.Getpid()),
			strconv.FormatUint(uint64(uintptr(unsafe.Pointer(&secret[0]))), 10), strconv.Itoa(len(secret))}, path: exe}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := runProgram("org.example.probe:1.0.0", h, slog.New(slog.DiscardHandler), nil)(ctx, map[string]any{})
		runtime.KeepAlive(secret)
		if err != nil {
			t.Fatalf("the probe failed: %v", err)
		}
		m, _ := out.(map[string]any)
		if m["error"] != nil {
			t.Fatalf("the probe could not drop CAP_SYS_PTRACE: %v", m["error"])
		}
		return m
	}
	was, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The control: the same probe of a dumpable agent.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	control := probe()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(was), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if control["read"] != hex.EncodeToString(secret) {
		t.Skipf("this host refuses a program's read of a dumpable agent too (Yama): %v", control)
	}
	if got := probe(); got["refused"] != "EPERM" {
		t.Fatalf("a handler program read the agent's memory: %v (the agent's dumpable flag: %d)", got, was)
	}
}
