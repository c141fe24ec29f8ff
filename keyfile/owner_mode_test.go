//go:build !windows

package keyfile

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOwnerModeJudgement: the Unix rule for a key, passphrase or token
// file, as values. A file another user owns is refused whatever its mode
// (that user reads the key and may replace it); root's files and our own
// are judged by their mode.
func TestOwnerModeJudgement(t *testing.T) {
	const me, other = 1000, 1001
	for _, c := range []struct {
		name        string
		owner, euid uint32
		perm        fs.FileMode
		ok          bool
	}{
		{"ours, 0600", me, me, 0o600, true},
		{"ours, 0400", me, me, 0o400, true},
		{"ours, group may read", me, me, 0o640, false},
		{"ours, others may write", me, me, 0o602, false},
		{"root's, read by a service user", 0, me, 0o600, true},
		{"root's, read by root", 0, 0, 0o600, true},
		{"another user's 0600, read by root", other, 0, 0o600, false},
		{"another user's 0600, read by a user", other, me, 0o600, false},
		{"another user's 0644", other, me, 0o644, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := judgeOwnerMode(c.owner, c.euid, c.perm, "private key file")
			if c.ok != (err == nil) {
				t.Fatalf("owner %d, reader %d, mode %04o: %v", c.owner, c.euid, c.perm, err)
			}
			if err != nil && !errors.Is(err, amp.ErrName("insecure_key_file")) {
				t.Fatalf("refused by another name: %v", err)
			}
		})
	}
}
