//go:build unix

package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestFolderAboveTheLedgersAnotherUserMayWriteIsRefused: only the log's
// own folder was judged (AGENT-44). A user who may write a folder above
// it (0775 or 0777 without the sticky bit, or one they own) renames the
// log's folder away and puts another folder of the agent's user in its
// place, a backup holding an older log or another agent's folder, whose
// owner and mode pass: the open read that log, and every acknowledged
// invocation it lacks ran its handler again when retried. A link to the
// log's folder kept in such a folder is theirs to repoint the same way.
// What should happen (docs/SPEC-DECISIONS.md AGENT-48): the open, and
// OpenFile, refuse (ledger_unavailable, naming the folder) before
// anything is made; folders above of the agent's user or root that only
// their owner may write, or sticky ones (as /tmp), open.
func TestFolderAboveTheLedgersAnotherUserMayWriteIsRefused(t *testing.T) {
	k := Key{Sender: "did:key:zW", ID: id(1)}
	cases := []struct {
		name  string
		mode  os.FileMode // the folder above the log's
		owner int         // -1: the test's user
		link  bool        // the log's folder is reached through a link kept in it
		file  bool        // through OpenFile
		want  string      // "" opens; else a word of the refusal
	}{
		{"mode 0755", 0o755, -1, false, false, ""},
		{"mode 1777, sticky", 0o777 | os.ModeSticky, -1, false, false, ""},
		{"mode 0755, holding a link to the log's folder", 0o755, -1, true, false, ""},
		{"mode 0775, group writes", 0o775, -1, false, false, "group or others"},
		{"mode 0757, others write", 0o757, -1, false, false, "group or others"},
		{"mode 0777, through OpenFile", 0o777, -1, false, true, "group or others"},
		{"mode 0777, holding a link to the log's folder", 0o777, -1, true, false, "group or others"},
		{"another user's, mode 0755", 0o755, 4242, false, false, "another user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			base := t.TempDir()
			above := filepath.Join(base, "shared")
			mkdir(t, above, 0o755)
			dir := filepath.Join(above, "agent")
			if tc.link {
				dir = filepath.Join(base, "agent")
			}
			mkdir(t, dir, 0o700)
			path := filepath.Join(dir, "registry.db.ledger.wal")
			s := openTestWAL(t, path, c, WALOptions{})
			if err := s.MarkRunning(k, c.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := s.Finish(k, []byte("reply")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			opened := filepath.Join(above, "agent")
			if tc.link {
				symlink(t, dir, opened)
			}
			if tc.owner >= 0 {
				if err := os.Chown(above, tc.owner, -1); err != nil {
					t.Skipf("cannot give the folder to another user here: %v", err)
				}
			}
			if err := os.Chmod(above, tc.mode); err != nil {
				t.Fatal(err)
			}
			names, data := folderNames(t, dir), mustRead(t, path)
			var st Store
			var err error
			if tc.file {
				st, _, err = OpenFile(filepath.Join(opened, "registry.db"), FileOptions{Now: c.Now})
			} else {
				st, err = OpenWAL(filepath.Join(opened, "registry.db.ledger.wal"), WALOptions{Now: c.Now})
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("open below folders of the agent's own: %v", err)
				}
				defer st.Close()
				rec, ok, err := st.Lookup(k)
				if err != nil || !ok || string(rec.Reply) != "reply" {
					t.Fatalf("the reply: %q %v %v", rec.Reply, ok, err)
				}
				return
			}
			if err == nil {
				st.Close()
			}
			if amp.NameOf(err) != ErrLedgerIO || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), above) {
				t.Fatalf("open: %v, want ledger_unavailable naming %q and the folder", err, tc.want)
			}
			if got := folderNames(t, dir); strings.Join(got, " ") != strings.Join(names, " ") {
				t.Fatalf("the log's folder's names changed: %v, were %v", got, names)
			}
			if got := mustRead(t, path); !bytes.Equal(got, data) {
				t.Fatalf("the log was changed: %d bytes, were %d", len(got), len(data))
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
