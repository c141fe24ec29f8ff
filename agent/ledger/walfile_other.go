//go:build !unix

package ledger

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// lockFile refuses: without an advisory file lock two processes could
// share the log. Use the bbolt store on this platform.
func lockFile(string, time.Duration) (*os.File, error) {
	return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the write-ahead log ledger needs file locking, which this platform lacks; use the bbolt ledger")
}

func unlockFile(f *os.File) error { return f.Close() }

func syncDir(string) error { return nil }

// isNoSpace reports whether err says the disk has no room for more bytes.
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
