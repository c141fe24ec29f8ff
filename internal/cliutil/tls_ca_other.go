//go:build !unix

package cliutil

import (
	"io/fs"

	"github.com/ampbundle/ampbundle/amp"
)

// caWriters: a file's owner and writers cannot be judged from its mode
// here (Windows reports every writable file as 0666); a CA file is read
// as the folder it lies in lets it be, as the agent's config file is
// (docs/SPEC-DECISIONS.md, CLI-54, CLI-86).
func caWriters(fs.FileInfo, string, amp.ErrName) error { return nil }
