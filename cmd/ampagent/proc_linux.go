//go:build linux

package main

import "golang.org/x/sys/unix"

// waitLeader waits until the process pid (a child of the agent) has
// exited, without reaping it (waitid with WNOWAIT): it stays a zombie, its
// pid still its own and its group's, until exec.Cmd.Wait reaps it. It
// reports false when it could not wait (the caller then kills the group
// only after the reap).
func waitLeader(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
