//go:build !unix

package main

import "io/fs"

// configWriters: a file's owner and writers cannot be judged from its
// mode here (Windows reports writable files as 0666); the config file is
// read as the folder it lies in lets it be.
func configWriters(fs.FileInfo) error { return nil }

// programWriters: as configWriters, a handler's program, and the
// interpreter its #! line names, are run as the folders they lie in let
// them be (CLI-70, CLI-72).
func programWriters(mountProbe, string, []string, string) error { return nil }

// mountProbe: nothing of the mounts is told here (CLI-78).
type mountProbe struct{}

// hostMounts is the host's mountProbe.
func hostMounts() mountProbe { return mountProbe{} }
