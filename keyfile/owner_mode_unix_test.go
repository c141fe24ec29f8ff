//go:build unix

package keyfile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// statOf is a FileInfo of a file owned by uid with permission bits perm,
// as a Unix fstat gives it.
type statOf struct {
	uid  uint32
	perm fs.FileMode
}

func (s statOf) Name() string       { return "key" }
func (s statOf) Size() int64        { return 0 }
func (s statOf) Mode() fs.FileMode  { return s.perm }
func (s statOf) ModTime() time.Time { return time.Time{} }
func (s statOf) IsDir() bool        { return false }
func (s statOf) Sys() any           { return &syscall.Stat_t{Uid: s.uid} }

// TestOwnerModeJudgement: the Unix rule for a key, passphrase or token
// file, as values, run by any user. A file another user owns is refused
// whatever its mode (that user reads the key and may replace it); root's
// files and our own are judged by their mode.
func TestOwnerModeJudgement(t *testing.T) {
	me := uint32(os.Geteuid())
	other := me + 1
	if other == 0 {
		other = 2
	}
	for _, c := range []struct {
		name  string
		owner uint32
		perm  fs.FileMode
		ok    bool
	}{
		{"ours, 0600", me, 0o600, true},
		{"ours, 0400", me, 0o400, true},
		{"ours, group may read", me, 0o640, false},
		{"ours, others may write", me, 0o602, false},
		{"root's, 0600", 0, 0o600, true},
		{"another user's 0600", other, 0o600, false},
		{"another user's 0644", other, 0o644, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := judgeOpenFile(nil, statOf{c.owner, c.perm}, "private key file")
			if c.ok != (err == nil) {
				t.Fatalf("owner %d, reader %d, mode %04o: %v", c.owner, me, c.perm, err)
			}
			if err != nil && !errors.Is(err, amp.ErrName("insecure_key_file")) {
				t.Fatalf("refused by another name: %v", err)
			}
		})
	}
}
