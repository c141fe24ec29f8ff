//go:build unix

package ledger

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCompactionOfALogReachedThroughALinkKeepsTheLink: a log may be
// reached through a link (an operator's log on another disk, AGENT-41),
// but a compaction renamed its new file over the name it was given: the
// link was replaced by a regular file in the link's folder, and the file
// the link led to stayed behind, without any group written since. A
// deployment that makes the link again (an entrypoint's ln -sf, a
// configuration tool) had the next start read that stale log: the
// replies acknowledged since were gone and their retries ran their
// handlers a second time. What should happen (docs/SPEC-DECISIONS.md
// AGENT-45): the log is opened by the name the link leads to, and
// compacted there; the link stays a link, and both names answer the last
// reply.
func TestCompactionOfALogReachedThroughALinkKeepsTheLink(t *testing.T) {
	c := newClock()
	real := filepath.Join(t.TempDir(), "real.wal")
	link := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, real, c, WALOptions{})
	s.Close()
	symlink(t, real, link)
	s = openTestWAL(t, link, c, WALOptions{Slack: 512})
	for i := 0; i < 40 && s.compactions.Load() == 0; i++ {
		k := Key{Sender: "did:key:zW", ID: id(i)}
		if err := s.MarkRunning(k, c.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(k, []byte("reply")); err != nil {
			t.Fatal(err)
		}
	}
	if s.compactions.Load() == 0 {
		t.Fatal("no compaction ran")
	}
	last := Key{Sender: "did:key:zW", ID: id(99)}
	if err := s.MarkRunning(last, c.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(last, []byte("last")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by the compaction: %v %v", fi.Mode(), err)
	}
	for _, name := range []string{real, link} {
		r, err := OpenWAL(name, WALOptions{Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		rec, ok, err := r.Lookup(last)
		r.Close()
		if err != nil || !ok || string(rec.Reply) != "last" {
			t.Fatalf("%s: the reply acknowledged after the compaction: %q %v %v", filepath.Base(name), rec.Reply, ok, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(link), "l.wal.compact")); err == nil {
		t.Fatal("a temporary file was left in the link's folder")
	}
}
