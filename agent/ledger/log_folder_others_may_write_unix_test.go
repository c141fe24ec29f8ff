//go:build unix

package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestLogFolderAnotherUserMayWriteIsRefused: the log's folder was never
// judged, though a user who may write it (a folder 0775 or 0777 without
// the sticky bit, or one they own) may rename the agent's own log away
// (the next open made an empty one: every acknowledged invocation
// retried ran its handler again) or put an older log of the agent's in
// its place, files whose owner and mode pass AGENT-41's checks. What
// should happen (docs/SPEC-DECISIONS.md AGENT-44): the open, and
// OpenFile before a migration, refuse such a folder (ledger_unavailable)
// before anything is made or changed in it; a folder of the agent's
// user or root that only its owner may write, or a sticky one (as /tmp),
// opens and answers the recorded reply.
func TestLogFolderAnotherUserMayWriteIsRefused(t *testing.T) {
	k := Key{Sender: "did:key:zW", ID: id(1)}
	openWAL := func(dir string, c *clock) (Store, error) {
		return OpenWAL(filepath.Join(dir, "registry.db.ledger.wal"), WALOptions{Now: c.Now})
	}
	openFile := func(dir string, c *clock) (Store, error) {
		s, _, err := OpenFile(filepath.Join(dir, "registry.db"), FileOptions{Now: c.Now})
		return s, err
	}
	cases := []struct {
		name  string
		mode  os.FileMode
		owner int // -1: the test's user
		open  func(dir string, c *clock) (Store, error)
		want  string // "" opens; else a word of the refusal
		bolt  bool   // a bbolt ledger already migrated is left beside the log
	}{
		{"mode 0700", 0o700, -1, openWAL, "", false},
		{"mode 0755", 0o755, -1, openWAL, "", false},
		{"mode 1777, sticky", 0o777 | os.ModeSticky, -1, openWAL, "", false},
		{"mode 0775, group writes", 0o775, -1, openWAL, "group or others", false},
		{"mode 0757, others write", 0o757, -1, openWAL, "group or others", false},
		{"mode 0777, through OpenFile", 0o777, -1, openFile, "group or others", false},
		{"another user's, mode 0755", 0o755, 4242, openWAL, "another user", false},
		{"another user's, through OpenFile", 0o700, 4242, openFile, "another user", false},
		// A crash after a migration's rename left the bbolt ledger's old
		// name, which OpenFile gives up before it takes the lock.
		{"mode 0775, a migration to finish", 0o775, -1, openFile, "group or others", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "registry.db.ledger.wal")
			s := openTestWAL(t, path, c, WALOptions{})
			if err := s.MarkRunning(k, c.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := s.Finish(k, []byte("reply")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if tc.bolt {
				old := filepath.Join(dir, "registry.db.ledger")
				writeBoltLedger(t, old, nil)
				if err := os.Link(old, old+".migrated-20261122"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.owner >= 0 {
				if err := os.Chown(dir, tc.owner, -1); err != nil {
					t.Skipf("cannot give the folder to another user here: %v", err)
				}
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			names, data := folderNames(t, dir), mustRead(t, path)
			st, err := tc.open(dir, c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("open in the agent's own folder: %v", err)
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
			if amp.NameOf(err) != ErrLedgerIO || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open: %v, want ledger_unavailable naming %q", err, tc.want)
			}
			if got := folderNames(t, dir); !slices.Equal(got, names) {
				t.Fatalf("the refused folder's names changed: %v, were %v", got, names)
			}
			if got := mustRead(t, path); !bytes.Equal(got, data) {
				t.Fatalf("a log in a refused folder was changed: %d bytes, were %d", len(got), len(data))
			}
		})
	}
}

// folderNames lists the names in dir, sorted.
func folderNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
