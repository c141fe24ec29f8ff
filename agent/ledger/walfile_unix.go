//go:build unix

package ledger

import (
	"errors"
	"os"
	"syscall"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// tryLock takes an exclusive flock on f without waiting; held reports
// that another process holds it.
func tryLock(f *os.File) (held bool, err error) {
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		return true, nil
	default:
		return false, err
	}
}

// isNoSpace reports whether err says the disk (or the process's file size
// limit, or a quota) has no room for more bytes.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// logWriters refuses a log (st: the open file's fstat) that another user
// than this process's effective one or root owns (regfile.ForeignOwner),
// or that group or others may write: that user could drop a record (the
// next retry of its invocation runs the handler again) or give a message
// another's reply, with groups whose tags check, since the key is in the
// file (docs/SPEC-DECISIONS.md AGENT-41). The writer makes every log mode
// 0600, so an honest one never is.
func logWriters(st os.FileInfo) error {
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// A number the system gave, not text another user chose.
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO,
			"the ledger file is owned by another user (uid %d) than the agent's (uid %d) or root; make it the agent's user's (chown) and writable by it alone (chmod go-w)", uid, os.Geteuid())
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO,
			"the ledger file may be written by group or others (mode %04o); make it writable by the agent's user alone (chmod go-w)", perm)
	}
	return nil
}
