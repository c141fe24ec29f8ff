//go:build unix

package cliutil

import (
	"io/fs"
	"os"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// caWriters refuses (refused, with a hint) a CA file, st the fstat of the
// file opened, that another user than this process's effective one or
// root owns (regfile.ForeignOwner), or that group or others may write:
// that user would choose the certificates trusted. Reading stays open to
// all (0644, a Kubernetes secret's or config map's default): a CA file
// holds no secret (docs/SPEC-DECISIONS.md, CLI-86).
func caWriters(st fs.FileInfo, name string, refused amp.ErrName) error {
	hint := "make the " + name + " this user's or root's (chown) and writable by its owner alone (chmod go-w)"
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// A number the system gave, not text another user chose.
		return WithHint(Failf(refused, "the %s is owned by another user (uid %d) than this one (uid %d) or root", name, uid, os.Geteuid()), hint)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return WithHint(Failf(refused, "the %s may be written by group or others (mode %04o)", name, perm), hint)
	}
	return nil
}
