//go:build unix

package main

import (
	"io/fs"
	"os"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// configWriters refuses a config file (st: the open file's fstat) that
// another user than this process's effective one or root owns, or that
// group or others may write: that user could have the agent run a
// program of theirs as the agent's user, or widen its allow rules, as
// OpenSSH refuses such a config file ("Bad owner or permissions",
// readconf.c). Reading it stays open to anyone the operator lets.
func configWriters(st fs.FileInfo) error {
	hint := "make the config file the agent's user's (chown) and writable by it alone (chmod go-w)"
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// A number the system gave, not text another user chose.
		return cliutil.WithHint(cliutil.Failf("invalid_config", "the config file is owned by another user (uid %d) than the agent's (uid %d) or root", uid, os.Geteuid()), hint)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return cliutil.WithHint(cliutil.Failf("invalid_config", "the config file may be written by group or others (mode %04o)", perm), hint)
	}
	return nil
}
