//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel runs cmd in a process group of its own and, when its
// context ends, kills the whole group: a handler's children die with it.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
