//go:build unix

package regfile

import (
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"
)

// ownedInfo is a FileInfo whose owner is uid.
type ownedInfo struct{ uid uint32 }

func (o ownedInfo) Name() string       { return "f" }
func (o ownedInfo) Size() int64        { return 0 }
func (o ownedInfo) Mode() fs.FileMode  { return 0o600 }
func (o ownedInfo) ModTime() time.Time { return time.Time{} }
func (o ownedInfo) IsDir() bool        { return false }
func (o ownedInfo) Sys() any           { return &syscall.Stat_t{Uid: o.uid} }

// TestForeignOwnerIsNeitherThisUserNorRoot: the one owner rule of the
// files and folders a process trusts (CLI-54, CLI-55): a file of another
// user is foreign whatever its mode (that user may rewrite, replace or
// chmod it); this process's user's and root's are not. As values, so that
// it runs without root.
func TestForeignOwnerIsNeitherThisUserNorRoot(t *testing.T) {
	me := uint32(os.Geteuid())
	other := me + 1
	if other == 0 {
		other = 2
	}
	for _, c := range []struct {
		uid     uint32
		foreign bool
	}{{me, false}, {0, false}, {other, true}, {65534, me != 65534}} {
		if uid, foreign := ForeignOwner(ownedInfo{c.uid}); foreign != c.foreign || foreign && uid != c.uid {
			t.Errorf("owner %d (this process %d): foreign %v uid %d, want %v", c.uid, me, foreign, uid, c.foreign)
		}
	}
}
