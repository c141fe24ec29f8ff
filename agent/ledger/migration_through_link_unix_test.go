//go:build unix

package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMigrationOfALedgerReachedThroughALinkKeepsTheLink: a bbolt ledger
// named by an explicit path that is a link (an operator's ledger on
// another disk, AGENT-41) was migrated beside the link: the new log was
// renamed over the link, which became a regular file in the link's
// folder, and the bbolt ledger the link led to stayed where it was. A
// deployment that makes the link again (an entrypoint's ln -sf, as in
// AGENT-45) had the next start find that bbolt ledger at the name and
// migrate it again over the log: every reply recorded since the first
// migration was gone, and the retries of those invocations ran their
// handlers a second time. What should happen (docs/SPEC-DECISIONS.md
// AGENT-47): the ledger is migrated where the link leads, the link stays
// a link, the bbolt ledger is kept aside beside it, and a link made again
// still leads to the log.
func TestMigrationOfALedgerReachedThroughALinkKeepsTheLink(t *testing.T) {
	c := newClock()
	dir, disk := t.TempDir(), t.TempDir()
	reg := filepath.Join(dir, "registry.db")
	target := filepath.Join(disk, "agent.ledger")
	link := filepath.Join(dir, "agent.ledger")
	rows := oldLedger(t, target, c)
	oldBytes, _ := os.ReadFile(target)
	symlink(t, target, link)
	o := FileOptions{Now: c.Now, LockTimeout: 50 * time.Millisecond, Path: link}
	var aside string
	o.Migrated = func(a, _ string, _ int) { aside = a }
	s, _, err := OpenFile(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	since := Key{Sender: "did:key:zNew", ID: id(500)}
	if err := s.MarkRunning(since, c.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(since, []byte("recorded after the migration")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by the migration: %v %v", fi.Mode(), err)
	}
	if want := target + ".migrated-20261122"; aside != want {
		t.Fatalf("the bbolt ledger was kept as %s, want %s", aside, want)
	}
	if kept, _ := os.ReadFile(aside); !bytes.Equal(kept, oldBytes) {
		t.Fatal("the bbolt ledger was not kept unchanged")
	}
	if names := dirNames(t, dir); len(names) != 2 || names[0] != "agent.ledger" || names[1] != "agent.ledger.lock" {
		t.Fatalf("the link's folder holds %v, want the link and its lock file", names)
	}
	// The deployment makes the link again.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, link)
	s, _, err = OpenFile(reg, FileOptions{Now: c.Now, LockTimeout: 50 * time.Millisecond, Path: link})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, ok, err := s.Lookup(since)
	if err != nil || !ok || string(rec.Reply) != "recorded after the migration" {
		t.Fatalf("the reply recorded after the migration, the link made again: %q %v %v", rec.Reply, ok, err)
	}
	if rec, ok, err := s.Lookup(rows[0].k); err != nil || !ok || !bytes.Equal(rec.Reply, rows[0].rec.Reply) {
		t.Fatalf("a migrated reply: %q %v %v", rec.Reply, ok, err)
	}
}
