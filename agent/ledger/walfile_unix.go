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

// tryLockLog takes the lock on the log file itself (lockLog): the same
// flock as the lock file's.
func tryLockLog(f *os.File) (held bool, err error) { return tryLock(f) }

// isNoSpace reports whether err says the disk (or the process's file size
// limit, or a quota) has no room for more bytes.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// logWriters refuses a log (st: the open file's fstat) that another user
// than this process's effective one or root owns, or that group or others
// may write (regfile.OthersMayWrite, the rule the config and CA files are
// judged by): that user could drop a record (the
// next retry of its invocation runs the handler again) or give a message
// another's reply, with groups whose tags check, since the key is in the
// file (docs/SPEC-DECISIONS.md AGENT-41). The writer makes every log mode
// 0600, so an honest one never is.
//
// what names the file in the refusal ("the ledger file", or its lock
// file: the same rule, AGENT-43).
func logWriters(st os.FileInfo, what string) error {
	w := regfile.OthersMayWrite(st) // numbers the system gave, not text another user chose
	if w == nil {
		return nil
	}
	hint := "make it writable by the agent's user alone (chmod go-w)"
	if w.Foreign {
		hint = "make it the agent's user's (chown) and writable by it alone (chmod go-w)"
	}
	return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "%s; %s", w.Reason(what, "the agent's"), hint)
}

// lockNoFollow makes the lock file's open fail on a link put at its name
// (O_NOFOLLOW) and never wait (O_NONBLOCK: a FIFO put there since is
// opened at once, then refused).
const lockNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// logFolder refuses the folder dir that holds the log, its lock file and
// its temporary file (links followed, as the log's own lookups follow
// them) when another user than this process's effective one or root owns
// it (regfile.ForeignOwner), or when group or others may write it without
// the sticky bit: that user could rename the agent's own log away (the
// next open makes an empty one: every acknowledged invocation retried
// runs its handler again) or put an older log of the agent's in its
// place, with files whose owner and mode pass logWriters. A sticky folder
// (/tmp) lets them take only names nothing holds yet, which the log's
// checks refuse (docs/SPEC-DECISIONS.md AGENT-44). Every folder above it
// is judged by the same rule (foldersAbove, AGENT-48).
func logFolder(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return walIOError("cannot examine the ledger's folder", err)
	}
	if !st.IsDir() {
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger's folder is not a folder (%s)", st.Mode().Type())
	}
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// A number the system gave, not text another user chose.
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO,
			"the ledger's folder is owned by another user (uid %d) than the agent's (uid %d) or root, who may replace the log in it; make it the agent's user's or root's (chown) and writable by its owner alone (chmod go-w)", uid, os.Geteuid())
	}
	if regfile.OthersMayRename(st) {
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO,
			"the ledger's folder may be written by group or others (mode %04o), who may replace the log in it; make it writable by its owner alone (chmod go-w), or put the ledger in a folder that is (--ledger)", st.Mode().Perm())
	}
	return foldersAbove(dir)
}

// foldersAbove refuses the log's folder dir when a folder a lookup of dir
// passes through (regfile.FolderAbove: along the path as given and the one
// it resolves to, the folders links lie in and those above their targets)
// is one logFolder would refuse. Whoever may write a folder above can
// rename the log's folder away and put another folder of the agent's user
// in its place (a backup holding an older log, another agent's folder):
// its owner and mode pass logFolder, and the acknowledged invocations its
// log lacks run their handlers again when retried; a link in such a
// folder is theirs to repoint the same way (docs/SPEC-DECISIONS.md
// AGENT-48). The folder named is the operator's path, quoted.
func foldersAbove(dir string) error {
	_, a := regfile.FolderAbove(dir)
	switch {
	case a == nil:
		return nil
	case a.Foreign:
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO,
			"the folder %q above the ledger's is owned by another user (uid %d) than the agent's (uid %d) or root, who may replace the ledger's folder; put the ledger below folders of the agent's user or root (--ledger)", a.Path, a.UID, os.Geteuid())
	case a.Writable:
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO,
			"the folder %q above the ledger's may be written by group or others (mode %04o), who may replace the ledger's folder; make it writable by its owner alone (chmod go-w) or sticky (chmod +t), or put the ledger elsewhere (--ledger)", a.Path, a.Mode)
	case errors.Is(a.Err, regfile.ErrTooManyLinks):
		return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "cannot follow the links to the ledger's folder")
	}
	return walIOError("cannot examine the folders above the ledger's", a.Err)
}
