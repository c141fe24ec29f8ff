//go:build unix

package cliutil

import (
	"io/fs"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// caWriters refuses (refused, with a hint) a CA file, st the fstat of the
// file opened, that another user than this process's effective one or
// root owns, or that group or others may write (regfile.OthersMayWrite,
// the one rule of the agent's config file too, CLI-91): that user would
// choose the certificates trusted. Reading stays open to all (0644, a
// Kubernetes secret's or config map's default): a CA file holds no secret
// (docs/SPEC-DECISIONS.md, CLI-86).
func caWriters(st fs.FileInfo, name string, refused amp.ErrName) error {
	if w := regfile.OthersMayWrite(st); w != nil {
		// Numbers the system gave, not text another user chose.
		return WithHint(Failf(refused, "%s", w.Reason("the "+name, "this one")),
			"make the "+name+" this user's or root's (chown) and writable by its owner alone (chmod go-w)")
	}
	return nil
}
