//go:build !unix

package main

import "os/exec"

// confineProgram: without Unix process groups only the program itself
// is killed when its context ends (exec.CommandContext's default), and
// what it started is not reached (CLI-40).
func confineProgram(*exec.Cmd) {}

// runInGroup runs cmd: without Unix process groups there is no group to
// kill once the program exited.
func runInGroup(cmd *exec.Cmd) error { return cmd.Run() }

// reaperKilled: no reaper here (CLI-40).
func reaperKilled(error) bool { return false }
