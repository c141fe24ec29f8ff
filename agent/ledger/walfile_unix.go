//go:build unix

package ledger

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// lockFile opens (creating) path and takes an exclusive flock on it,
// waiting at most timeout for another process to release it.
func lockFile(path string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, walIOError("cannot open the ledger's lock file", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, walIOError("cannot lock the ledger file", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is in use by another process")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unlockFile releases the lock (closing the file releases the flock).
func unlockFile(f *os.File) error { return f.Close() }

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// isNoSpace reports whether err says the disk (or the process's file size
// limit, or a quota) has no room for more bytes.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}
