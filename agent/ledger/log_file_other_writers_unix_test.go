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

// closedLog writes a log holding one reply, closed by its writer (its
// reserve of zeros still after it), and returns its path and bytes.
func closedLog(t *testing.T, c *clock) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c, WALOptions{})
	k := Key{Sender: "did:key:zW", ID: id(1)}
	if err := s.MarkRunning(k, c.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(k, []byte("reply")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	return path, mustRead(t, path)
}

// TestLogFileAnotherUserMayWriteIsRefused: the log was opened and replayed
// whoever owned it and whatever its mode, though any user who may write it
// can drop a record (the next retry of that invocation runs its handler
// again) or give a message another one's reply, in groups whose tags
// check (the key is in the file); an agent run as root over a log its
// users own was theirs to steer. A log another user than the agent's or
// root owns, or that group or others may write, is now refused
// (ledger_unavailable) before anything is written to it: the open's
// truncation of the writer's reserve changed it before (AGENT-41).
func TestLogFileAnotherUserMayWriteIsRefused(t *testing.T) {
	c := newClock()
	cases := []struct {
		name  string
		mode  os.FileMode
		owner int    // -1: the test's user
		link  bool   // the name is a link to the log
		want  string // "" opens; else a word of the refusal
	}{
		{"mode 0600", 0o600, -1, false, ""},
		{"mode 0644, others read", 0o644, -1, false, ""},
		{"mode 0400, read only", 0o400, -1, false, ""},
		{"mode 0660, group writes", 0o660, -1, false, "group or others"},
		{"mode 0602, others write", 0o602, -1, false, "group or others"},
		{"mode 0666", 0o666, -1, false, "group or others"},
		{"a link to a log group writes", 0o620, -1, true, "group or others"},
		{"another user's, mode 0600", 0o600, 4242, false, "another user"},
		{"a link to another user's", 0o600, 4242, true, "another user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, data := closedLog(t, c)
			if tc.owner >= 0 {
				if err := os.Chown(path, tc.owner, -1); err != nil {
					t.Skipf("cannot give the log to another user here: %v", err)
				}
			}
			if tc.mode&0o200 == 0 && os.Geteuid() != 0 {
				t.Skip("a read-only log cannot be opened for writing but by root")
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			name := path
			if tc.link {
				name = filepath.Join(t.TempDir(), "link.wal")
				if err := os.Symlink(path, name); err != nil {
					t.Fatal(err)
				}
			}
			fi, _ := os.Stat(path)
			s, err := OpenWAL(name, WALOptions{Now: c.Now})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("open of the agent's own log: %v", err)
				}
				defer s.Close()
				rec, ok, err := s.Lookup(Key{Sender: "did:key:zW", ID: id(1)})
				if err != nil || !ok || string(rec.Reply) != "reply" {
					t.Fatalf("the reply: %q %v %v", rec.Reply, ok, err)
				}
				return
			}
			if err == nil {
				s.Close()
			}
			if amp.NameOf(err) != ErrLedgerIO || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open: %v, want ledger_unavailable naming %q", err, tc.want)
			}
			if got := mustRead(t, path); !bytes.Equal(got, data) {
				t.Fatalf("a refused log was changed: %d bytes, were %d", len(got), len(data))
			}
			if after, _ := os.Stat(path); !after.ModTime().Equal(fi.ModTime()) {
				t.Fatal("a refused log's time of last write was changed")
			}
		})
	}
}

// TestCompactionOverALinkPlantedAtItsTemporaryNameNeverWritesItsTarget: a compaction
// opened its temporary file (LOG.compact) with O_TRUNC, following
// whatever was at that name: a link planted there had the target
// truncated and written with the log, and the rename then put the link
// itself in the log's place, the log now a file outside its folder. The
// temporary file is now always a new one (O_EXCL, after removing the
// name): the target is untouched and the log is a regular file of its own
// (AGENT-41).
func TestCompactionOverALinkPlantedAtItsTemporaryNameNeverWritesItsTarget(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	path := filepath.Join(dir, "l.wal")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("not the ledger's"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openTestWAL(t, path, c, WALOptions{Slack: 512})
	if err := os.Symlink(victim, path+".compact"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40 && s.compactions.Load() == 0; i++ {
		k := Key{Sender: "did:key:zW", ID: id(i)}
		if err := s.MarkRunning(k, c.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(k, []byte("reply")); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s.compactions.Load() == 0 {
		t.Fatal("no compaction ran")
	}
	if got := mustRead(t, victim); string(got) != "not the ledger's" {
		t.Fatalf("the target of a link planted at the temporary name was written: %d bytes", len(got))
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the log is no longer a regular file of its own: %v %v", fi.Mode(), err)
	}
}
