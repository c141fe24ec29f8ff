//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// confineProgram runs cmd in a process group of its own and, when its
// context ends, kills the whole group: a handler's children die with it.
// On Linux the program runs under a reaper of its own (underReaper),
// which also finds and kills the processes that left the group (CLI-40);
// elsewhere those are not reached.
func confineProgram(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	underReaper(cmd)
}

// runInGroup runs cmd (set up by confineProgram) and kills what is
// left of its process group once the program exited (killGroup): where
// the leader can be waited for without reaping it (Linux, waitLeader),
// before cmd.Wait reaps it, so that the group id, the leader's pid, is
// still the group's and no other process's (a pid is not handed out
// again while its process is unreaped), and the children it left holding
// its stdout die at once, so the result it printed is read to its end;
// elsewhere after cmd.Wait (CLI-34, CLI-39).
func runInGroup(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := waitLeader(cmd.Process.Pid)
	if exited {
		killGroup(cmd)
	}
	err := cmd.Wait()
	if !exited {
		killGroup(cmd)
	}
	return err
}

// killGroup kills what is left of the process group of cmd (started by
// confineProgram) once the program exited: children the program left
// running, in the background or holding its pipes, die with it (CLI-34).
// A group already empty is no error. A child that left the group (setsid,
// setpgid) is not reached here: on Linux the reaper killed it already
// (underReaper, CLI-40).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil || cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
