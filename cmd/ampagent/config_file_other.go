//go:build !unix

package main

import "io/fs"

// configWriters: a file's owner and writers cannot be judged from its
// mode here (Windows reports writable files as 0666); the config file is
// read as the folder it lies in lets it be.
func configWriters(fs.FileInfo) error { return nil }

// programWriters: as configWriters, a handler's program is run as the
// folders it lies in let it be (CLI-70).
func programWriters(string) error { return nil }
