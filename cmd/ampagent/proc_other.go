//go:build !unix

package main

import "os/exec"

// killGroupOnCancel: without Unix process groups only the program itself
// is killed when its context ends (exec.CommandContext's default).
func killGroupOnCancel(*exec.Cmd) {}

// killGroup: without Unix process groups there is no group to kill once
// the program returned; its children are not reached.
func killGroup(*exec.Cmd) {}
