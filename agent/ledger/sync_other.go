//go:build !linux

package ledger

import "os"

// fdatasync is fsync where fdatasync is not available (on macOS, Go's
// File.Sync asks the drive to flush its cache: F_FULLFSYNC).
func fdatasync(f *os.File) error { return f.Sync() }
