//go:build !unix && !windows

package ledger

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// lockFile refuses: without an advisory file lock two processes could
// share the log. This platform has no durable ledger (the bbolt store that
// did not need the lock is retired, docs/SPEC-DECISIONS.md).
func lockFile(string, time.Duration) (*os.File, error) {
	return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the write-ahead log ledger needs file locking, which this platform lacks; run the agent on a unix system")
}

func unlockFile(f *os.File) error { return f.Close() }

// lockLog: no log is opened here (lockFile refuses first).
func lockLog(*os.File, time.Duration) error { return nil }

// tryLockLog: no log is opened here (lockFile refuses first).
func tryLockLog(*os.File) (held bool, err error) { return false, nil }

// isNoSpace reports whether err says the disk has no room for more bytes.
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// logWriters: no log is opened here (lockFile refuses first).
func logWriters(os.FileInfo, string) error { return nil }

// logFolder: a folder's owner and mode are not read here
// (docs/SPEC-DECISIONS.md AGENT-44).
func logFolder(string) error { return nil }
