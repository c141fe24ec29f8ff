//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// confineProgram runs cmd in a process group of its own, killed once the
// program exited (runInGroup, CLI-34, CLI-39). When its context ends
// (the deadline, a cancel, an output over its cap), on Linux the program's
// reaper is told to stop (underReaper: it kills the program and all it
// started, what left the group included, CLI-40); elsewhere the whole
// group is killed, and a process that left it is not reached.
func confineProgram(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if underReaper(cmd) {
		// Not the group kill: it would kill the reaper first and leave
		// what left the group to init (CLI-40).
		return
	}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
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
