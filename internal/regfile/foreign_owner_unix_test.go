//go:build unix

package regfile

import (
	"os"
	"testing"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

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
		if uid, foreign := ForeignOwner(regfiletest.Stat(c.uid, 0o600)); foreign != c.foreign || foreign && uid != c.uid {
			t.Errorf("owner %d (this process %d): foreign %v uid %d, want %v", c.uid, me, foreign, uid, c.foreign)
		}
	}
}
