//go:build unix && !linux

package main

import "os/exec"

// waitLeader cannot wait for a child without reaping it here (no waitid
// in golang.org/x/sys/unix for this system): runInGroup kills the group
// after exec.Cmd.Wait reaped the program, as CLI-34 accepts.
func waitLeader(int) bool { return false }

// underReaper leaves cmd as it is and reports false: without a child
// subreaper here, a process the program started that left its group
// (setsid, setpgid) is not found, and outlives the invocation (CLI-40);
// confineProgram kills the group at the context's end. FreeBSD's
// procctl(PROC_REAP_ACQUIRE) would serve; it is not used yet.
func underReaper(*exec.Cmd) bool { return false }

// reaperKilled: no reaper here (underReaper).
func reaperKilled(error) bool { return false }
