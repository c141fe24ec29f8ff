//go:build unix

package keyfile

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// judgeOpenFile judges the open file's owner and mode (st is f's
// FileInfo, read from the open file). The owner must be this process's
// effective user or root (regfile.ForeignOwner, the rule every file the
// programs trust follows), as OpenSSH's safe_path (misc.c) requires of
// the files it trusts: another account that owns the file may read it (a
// private key it knows signs as this process) or rewrite it, chmod 600 or
// not; root may do either anyway (docs/SPEC-DECISIONS.md CLI-53). Then no
// bit may give group or others any access (judgeMode). A FileInfo
// without an owner (not from a Unix stat) refuses the file.
func judgeOpenFile(_ *os.File, st fs.FileInfo, what string) error {
	if _, ok := st.Sys().(*syscall.Stat_t); !ok {
		return fail(ErrInsecureKeyFile, "%s's owner cannot be read", what)
	}
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// The uids are numbers the system gave, not text another user
		// chose: they are printed, as ls -n prints them.
		return fail(ErrInsecureKeyFile, "%s is owned by another user (uid %d) than the one reading it (uid %d) or root; run chown on it, then chmod 600", what, uid, os.Geteuid())
	}
	return judgeMode(st.Mode().Perm(), what)
}
