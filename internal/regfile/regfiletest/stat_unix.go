//go:build unix

package regfiletest

import (
	"io/fs"
	"syscall"
	"time"
)

// statOf is a FileInfo of a regular file owned by uid with permission
// bits perm, as a Unix fstat reports it.
type statOf struct {
	uid  uint32
	perm fs.FileMode
}

// Stat returns the FileInfo an fstat of a regular file owned by uid with
// permission bits perm gives: for judging an owner and a mode as values,
// by any user (giving a file away needs root).
func Stat(uid uint32, perm fs.FileMode) fs.FileInfo { return statOf{uid, perm} }

func (s statOf) Name() string       { return "file" }
func (s statOf) Size() int64        { return 0 }
func (s statOf) Mode() fs.FileMode  { return s.perm }
func (s statOf) ModTime() time.Time { return time.Time{} }
func (s statOf) IsDir() bool        { return false }
func (s statOf) Sys() any           { return &syscall.Stat_t{Uid: s.uid} }
