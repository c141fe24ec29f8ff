package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOpenFileMigratesAnOldBoltLedgerOnce: an agent upgraded from the
// bbolt ledger must not forget what it recorded (a retry would run a
// handler again): the unexpired entries, running ones included, move to
// the new log once; the bbolt file is kept aside, and the next start uses
// the log alone.
func TestOpenFileMigratesAnOldBoltLedgerOnce(t *testing.T) {
	c := newClock()
	reg := filepath.Join(t.TempDir(), "registry.db")
	b, err := OpenBolt(reg+".ledger", BoltOptions{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := New(b, Options{Now: c.Now})
	for i, ttl := range []time.Duration{time.Hour, time.Hour, time.Second} {
		st, _ := l.Start("did:key:zOld", id(i), c.Now().Add(ttl))
		st.Ticket.Running()
		if i != 1 { // key 1 stays running: its handler's outcome is unknown
			st.Ticket.Finish(replyFor(i))
		}
	}
	b.Close()
	c.Add(time.Minute) // key 2 expired
	for round := 0; round < 2; round++ {
		migrated := -1
		s, kind, err := OpenFile(reg, FileOptions{Now: c.Now, Migrated: func(old, log string, n int) {
			if old != reg+".ledger.migrated" || log != reg+".ledger.wal" {
				t.Errorf("migrated %s to %s", old, log)
			}
			migrated = n
		}})
		if err != nil || kind != KindWAL {
			t.Fatalf("round %d: %v %s", round, err, kind)
		}
		if want := map[int]int{0: 2, 1: -1}[round]; migrated != want {
			t.Fatalf("round %d: %d entries migrated, want %d (-1: no migration)", round, migrated, want)
		}
		l, _ := New(s, Options{Now: c.Now})
		for i, want := range []State{Done, Lost, Fresh} {
			st, err := l.Start("did:key:zOld", id(i), c.Now().Add(time.Hour))
			if err != nil || st.State != want {
				t.Fatalf("round %d key %d: %s %v, want %s", round, i, st.State, err, want)
			}
			if want == Done && !bytes.Equal(st.Reply, replyFor(i)) {
				t.Fatalf("key %d replayed %q", i, st.Reply)
			}
			if st.Ticket != nil {
				st.Ticket.Abandon()
			}
		}
		s.Close()
		if _, err := os.Stat(reg + ".ledger"); !os.IsNotExist(err) {
			t.Fatalf("the bbolt ledger is still in place: %v", err)
		}
		if _, err := os.Stat(reg + ".ledger.migrated"); err != nil {
			t.Fatal(err)
		}
		for _, stray := range []string{".ledger.wal.migrating", ".ledger.wal.migrating.lock", ".ledger.wal.compact"} {
			if _, err := os.Stat(reg + stray); !os.IsNotExist(err) {
				t.Fatalf("%s left behind", stray)
			}
		}
	}
}

// TestOpenFileKinds: bbolt stays selectable; an explicit log path holding
// a bbolt ledger is refused, not overwritten; an unknown kind is refused.
func TestOpenFileKinds(t *testing.T) {
	c := newClock()
	reg := filepath.Join(t.TempDir(), "registry.db")
	s, kind, err := OpenFile(reg, FileOptions{Now: c.Now, Kind: KindBolt})
	if err != nil || kind != KindBolt {
		t.Fatal(err, kind)
	}
	if _, ok := s.(*BoltStore); !ok {
		t.Fatalf("%T", s)
	}
	s.Close()
	before, _ := os.ReadFile(reg + ".ledger")
	if _, _, err := OpenFile(reg, FileOptions{Now: c.Now, Path: reg + ".ledger"}); amp.NameOf(err) != ErrLedgerIO {
		t.Fatalf("a bbolt file opened as a log: %v", err)
	}
	if after, _ := os.ReadFile(reg + ".ledger"); !bytes.Equal(before, after) {
		t.Fatal("the bbolt file was changed")
	}
	if _, _, err := OpenFile(reg, FileOptions{Now: c.Now, Kind: "sqlite"}); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}
