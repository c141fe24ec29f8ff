//go:build unix

package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestLockFileWhoseNameLeadsElsewhereIsRefused: the lock file (LOG.lock)
// was opened with O_CREATE through whatever was at its name. Attack: a
// user who may write the log's folder plants a link there: to a name
// that does not exist, which the agent (as root, say) then created,
// mode 0600, wherever the link pointed (a /etc/nologin keeps every user
// but root out); to a file of the agent's, which the agent then held
// locked (another program's lock file); or plants a FIFO, or a lock file
// of their own, which they may lock to keep the agent out. What should
// happen (docs/SPEC-DECISIONS.md AGENT-43): a name that leads to anything
// but a regular file is refused without being opened or created
// through, and a lock file another user owns, or that group or others
// may write, is refused as the log is (ledger_unavailable); nothing is
// created, neither the link's target nor the log.
func TestLockFileWhoseNameLeadsElsewhereIsRefused(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, lock, elsewhere string)
		want  string // "" opens; else a word of the refusal
	}{
		{"the agent's own lock file", func(t *testing.T, lock, _ string) {
			writeFile(t, lock, 0o600)
		}, ""},
		{"a link to a name that does not exist", func(t *testing.T, lock, elsewhere string) {
			symlink(t, elsewhere, lock)
		}, "not a regular file"},
		{"a link to a file of the agent's", func(t *testing.T, lock, elsewhere string) {
			writeFile(t, elsewhere, 0o600)
			symlink(t, elsewhere, lock)
		}, "not a regular file"},
		{"a FIFO", func(t *testing.T, lock, _ string) {
			if err := syscall.Mkfifo(lock, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
		}, "not a regular file"},
		{"another user's lock file", func(t *testing.T, lock, _ string) {
			writeFile(t, lock, 0o600)
			if err := os.Chown(lock, 4242, -1); err != nil {
				t.Skipf("cannot give the lock file to another user here: %v", err)
			}
		}, "another user"},
		{"a lock file others may write", func(t *testing.T, lock, _ string) {
			writeFile(t, lock, 0o600)
			if err := os.Chmod(lock, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "group or others"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			path := filepath.Join(t.TempDir(), "l.wal")
			elsewhere := filepath.Join(t.TempDir(), "elsewhere")
			tc.plant(t, path+".lock", elsewhere)
			var before []byte
			if _, err := os.Lstat(elsewhere); err == nil {
				before = mustRead(t, elsewhere)
			}
			s, err := OpenWAL(path, WALOptions{Now: c.Now})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("open with the agent's own lock file: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
			}
			if amp.NameOf(err) != ErrLedgerIO || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open: %v, want ledger_unavailable naming %q", err, tc.want)
			}
			if _, lerr := os.Lstat(path); lerr == nil {
				t.Fatal("the log was created though its lock file was refused")
			}
			switch got, rerr := os.ReadFile(elsewhere); {
			case before == nil && rerr == nil:
				t.Fatal("a file was created where the planted link points")
			case before != nil && string(got) != string(before):
				t.Fatal("the file a planted link points to was changed")
			}
		})
	}
}

func writeFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, nil, mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
