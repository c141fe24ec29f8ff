//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDescriptorKeptFromProgramsWhereCloseRangeIsRefused: the reaper
// keeps the agent's inherited descriptors from a handler program with
// close_range(CLOSE_RANGE_CLOEXEC) (CLI-67), which kernels before 5.11
// lack (ENOSYS; 5.9 and 5.10 know close_range but not the flag, EINVAL)
// and a seccomp filter may refuse (EPERM). There the reaper lists
// /proc/self/fd and marks each descriptor, a path CLI-67 checked by hand
// only (threat: a fallback that marks nothing, on exactly the older
// hosts air-gapped sites run, passes a key file or a socket the agent
// inherited to every program). With close_range refused, a descriptor
// without close-on-exec gets the flag and a program started after it
// does not hold it; without a listing either, the reaper refuses to
// start the program (an error, fail closed).
func TestDescriptorKeptFromProgramsWhereCloseRangeIsRefused(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, tc := range []struct {
		name    string
		refusal error
		fdDir   string // "": /proc/self/fd
		wantErr bool
	}{
		{"a kernel without close_range", unix.ENOSYS, "", false},
		{"a kernel without CLOSE_RANGE_CLOEXEC", unix.EINVAL, "", false},
		{"a seccomp filter refusing close_range", unix.EPERM, "", false},
		{"no /proc either", unix.ENOSYS, filepath.Join(t.TempDir(), "no-proc"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0) // no SOCK_CLOEXEC
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fds[0]); syscall.Close(fds[1]) })
			fd := fds[0]
			fdDir := tc.fdDir
			if fdDir == "" {
				fdDir = "/proc/self/fd"
			}
			calls := 0
			err = closeOnExecWith(func() error { calls++; return tc.refusal }, fdDir)
			if calls != 1 {
				t.Fatalf("close_range tried %d times, want 1", calls)
			}
			if tc.wantErr {
				if err == nil {
					t.Fatal("no close_range and no listing of the descriptors, and the program would start")
				}
				return
			}
			if err != nil {
				t.Fatalf("the fallback through %s: %v", fdDir, err)
			}
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err != nil {
				t.Fatal(err)
			}
			if flags&unix.FD_CLOEXEC == 0 {
				t.Fatalf("descriptor %d is not close-on-exec after the fallback", fd)
			}
			n := strconv.Itoa(fd)
			out, err := exec.Command("/bin/sh", "-c", `if [ -e /proc/$$/fd/`+n+` ]; then echo held; else echo closed; fi`).Output()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != "closed\n" {
				t.Fatalf("a program started after the fallback holds descriptor %s: %s", n, out)
			}
		})
	}
}
