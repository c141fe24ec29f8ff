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

// killGroup kills what is left of the process group of cmd (started by
// killGroupOnCancel) once cmd returned: children the program left running,
// in the background or holding its pipes, die with it (CLI-34). A group
// already empty is no error. A child that left the group (setsid, setpgid)
// is not reached.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil || cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
