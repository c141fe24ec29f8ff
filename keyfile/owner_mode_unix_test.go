//go:build unix

package keyfile

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

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
			err := judgeOpenFile(nil, regfiletest.Stat(c.owner, c.perm), "private key file")
			if c.ok != (err == nil) {
				t.Fatalf("owner %d, reader %d, mode %04o: %v", c.owner, me, c.perm, err)
			}
			if err != nil && !errors.Is(err, amp.ErrName("insecure_key_file")) {
				t.Fatalf("refused by another name: %v", err)
			}
		})
	}
}
