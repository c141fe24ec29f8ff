package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// oldLedger writes, beside the registry reg, the bbolt ledger an agent of
// the retired store left (at file: reg + ".ledger" or an explicit path):
// done entries of two senders with replies of many lengths (the empty one
// included), one running entry (key 1) and one expired entry (key 2,
// expiring a second after c's time). It returns the rows.
func oldLedger(t *testing.T, file string, c *clock) []boltRow {
	t.Helper()
	var rows []boltRow
	for i := 0; i < 40; i++ {
		sender := []string{"did:key:zOld", "did:key:zOther"}[i%2]
		rec := Record{Expires: c.Now().Add(time.Duration(i+1) * time.Hour), Reply: replyFor(i)}
		switch i {
		case 1:
			rec.Reply = nil
		case 2:
			rec.Expires = c.Now().Add(time.Second)
		case 3:
			rec.Reply = []byte{}
		case 4:
			rec.Reply = bytes.Repeat([]byte{0, 0xff}, 40<<10) // binary, over a page
		}
		rows = append(rows, boltRow{Key{Sender: sender, ID: id(i)}, rec})
	}
	writeBoltLedger(t, file, rows)
	return rows
}

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	sort.Strings(names)
	return names
}

// layouts are the two ways an old bbolt ledger is found: the default
// name beside the registry, and an explicit path (migrated in place).
var layouts = []struct {
	name     string
	explicit bool
}{{"default path", false}, {"explicit path", true}}

// layout returns the registry path, the bbolt ledger's path, the options
// that open it, and the path of the log it becomes.
func layout(t *testing.T, explicit bool, c *clock) (reg, old, log string, o FileOptions) {
	dir := t.TempDir()
	reg = filepath.Join(dir, "registry.db")
	o = FileOptions{Now: c.Now, LockTimeout: 50 * time.Millisecond}
	if explicit {
		o.Path = filepath.Join(dir, "agent.ledger")
		return reg, o.Path, o.Path, o
	}
	return reg, reg + ".ledger", reg + ".ledger.wal", o
}

// TestMigrationFromBoltLedgerKeepsEveryReplyByteIdentical: an agent
// upgraded from the bbolt ledger must answer every retry of a finished
// invocation with the very bytes it sent before (a different reply, or
// none, breaks RFC 001 §16.2, and a forgotten entry runs the handler
// again): each unexpired done entry moves with its exact reply and
// expiry, the quotas are charged for what moved, and the old file is kept
// under OLD.migrated-YYYYMMDD, unchanged.
func TestMigrationFromBoltLedgerKeepsEveryReplyByteIdentical(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			c := newClock()
			reg, old, log, o := layout(t, lay.explicit, c)
			rows := oldLedger(t, old, c)
			oldBytes, _ := os.ReadFile(old)
			c.Add(time.Minute) // key 2 expired
			var aside, gotLog string
			migrated := -1
			o.Migrated = func(a, l string, n int) { aside, gotLog, migrated = a, l, n }
			// A share that the migrated entries of zOld fill.
			o.Limits = Limits{PerCaller: 1 << 20}
			s, kind, err := OpenFile(reg, o)
			if err != nil || kind != KindWAL {
				t.Fatal(err, kind)
			}
			defer s.Close()
			if _, ok := s.(*WALStore); !ok {
				t.Fatalf("opened a %T", s)
			}
			if want := old + ".migrated-20261122"; aside != want || gotLog != log || migrated != len(rows)-1 {
				t.Fatalf("migrated %d entries of %s to %s, want %d of %s to %s", migrated, aside, gotLog, len(rows)-1, want, log)
			}
			if kept, _ := os.ReadFile(aside); !bytes.Equal(kept, oldBytes) {
				t.Fatal("the old ledger was not kept unchanged")
			}
			for _, r := range rows {
				got, ok, err := s.Lookup(r.k)
				if err != nil {
					t.Fatal(err)
				}
				if r.k.ID == id(2) {
					if ok {
						t.Fatal("the expired entry moved")
					}
					continue
				}
				if !ok || !got.Expires.Equal(r.rec.Expires) || (got.Reply == nil) != (r.rec.Reply == nil) || !bytes.Equal(got.Reply, r.rec.Reply) {
					t.Fatalf("key %x: %d-byte reply expiring %v, want %d bytes expiring %v", r.k.ID, len(got.Reply), got.Expires, len(r.rec.Reply), r.rec.Expires)
				}
			}
			if u := s.Usage(); u.Entries != len(rows)-1 {
				t.Fatalf("usage %+v after migrating %d entries", u, len(rows)-1)
			}
			// The ledger answers the retries with the same bytes.
			l, _ := New(s, Options{Now: c.Now})
			for _, r := range rows {
				if r.rec.Reply == nil || r.k.ID == id(2) {
					continue
				}
				st, err := l.Start(r.k.Sender, r.k.ID, c.Now().Add(time.Hour))
				if err != nil || st.State != Done || !bytes.Equal(st.Reply, r.rec.Reply) {
					t.Fatalf("key %x: %s %v", r.k.ID, st.State, err)
				}
			}
			// The charges were recomputed: zOld's share holds its 80 KiB
			// reply, so a reservation of 960 KiB, which a new sender has,
			// no longer fits in it.
			for sender, want := range map[string]amp.ErrName{"did:key:zOld": ErrCallerFull, "did:key:zNew": ""} {
				st, _ := l.Start(sender, id(1000), c.Now().Add(time.Hour))
				st.Ticket.Reserve(1<<20 - 64<<10)
				if err := st.Ticket.Running(); amp.NameOf(err) != want {
					t.Fatalf("%s reserving 960 KiB of a 1 MiB share after the migration: %v, want %q", sender, err, want)
				}
				st.Ticket.Abandon()
			}
		})
	}
}

// TestMigrationKeepsRunningEntriesOutcomeUnknown: an entry the old agent
// marked running (it stopped between starting a handler and recording the
// reply) must not be run again after the upgrade: it moves as running, a
// retry gets Lost (the caller answers "outcome unknown"), and that answer
// is then what every later retry gets, across restarts.
func TestMigrationKeepsRunningEntriesOutcomeUnknown(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			c := newClock()
			reg, old, _, o := layout(t, lay.explicit, c)
			oldLedger(t, old, c)
			running := Key{Sender: "did:key:zOther", ID: id(1)}
			for round := 0; round < 2; round++ {
				s, _, err := OpenFile(reg, o)
				if err != nil {
					t.Fatal(err)
				}
				l, _ := New(s, Options{Now: c.Now})
				st, err := l.Start(running.Sender, running.ID, c.Now().Add(time.Hour))
				switch {
				case err != nil:
					t.Fatal(err)
				case round == 0 && st.State != Lost:
					t.Fatalf("the running entry is %s after the migration, want lost (a Fresh one would run twice)", st.State)
				case round == 0:
					if err := st.Ticket.Finish([]byte("outcome unknown")); err != nil {
						t.Fatal(err)
					}
				case st.State != Done || string(st.Reply) != "outcome unknown":
					t.Fatalf("after a restart: %s %q", st.State, st.Reply)
				}
				s.Close()
			}
		})
	}
}

// TestInterruptedMigrationLeavesTheOldLedgerUsable: a migration that
// cannot complete (in use by an agent still running, a damaged file, or
// an I/O error at any step, injected through the fault seam) is refused
// with ErrLedgerMigration and leaves the old ledger where it was, byte for
// byte, with nothing else beside it but the log's (empty) lock file; the
// next open migrates it whole. One
// interrupted after the log is in place finishes on the next open.
func TestInterruptedMigrationLeavesTheOldLedgerUsable(t *testing.T) {
	steps := []string{stepRead, stepSync, stepAside, stepPlace}
	for _, lay := range layouts {
		for _, step := range append(append([]string{}, steps...), "in use", "malformed entry") {
			t.Run(lay.name+"/"+step, func(t *testing.T) {
				c := newClock()
				reg, old, log, o := layout(t, lay.explicit, c)
				rows := oldLedger(t, old, c)
				dir := filepath.Dir(old)
				switch step {
				case "in use":
					db, err := bolt.Open(old, 0o600, nil) // an old agent still runs
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
				case "malformed entry":
					db, _ := bolt.Open(old, 0o600, nil)
					db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bEntries).Put([]byte("no separator"), []byte{9}) })
					db.Close()
				}
				before, beforeNames := mustRead(t, old), dirNames(t, dir)
				bad := o
				bad.fault = func(s string) error {
					if s == step {
						return errors.New("injected")
					}
					return nil
				}
				if _, _, err := OpenFile(reg, bad); amp.NameOf(err) != ErrLedgerMigration {
					t.Fatalf("interrupted at %s: %v", step, err)
				}
				if !bytes.Equal(mustRead(t, old), before) {
					t.Fatal("the old ledger changed")
				}
				if got := dirNames(t, dir); strings.Join(got, " ") != strings.Join(beforeNames, " ") &&
					strings.Join(got, " ") != strings.Join(append(beforeNames, filepath.Base(log)+".lock"), " ") {
					t.Fatalf("left %v, had %v", got, beforeNames)
				}
				if step == "in use" || step == "malformed entry" {
					return
				}
				s, _, err := OpenFile(reg, o)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if u := s.Usage(); u.Entries != len(rows) || log == "" {
					t.Fatalf("%d entries after the retried migration, want %d", u.Entries, len(rows))
				}
			})
		}
	}
	t.Run("after the log is in place", func(t *testing.T) {
		c := newClock()
		reg, old, log, o := layout(t, false, c)
		rows := oldLedger(t, old, c)
		before := mustRead(t, old)
		bad := o
		bad.fault = func(s string) error {
			if s == stepRetire {
				return errors.New("injected")
			}
			return nil
		}
		if _, _, err := OpenFile(reg, bad); amp.NameOf(err) != ErrLedgerMigration {
			t.Fatalf("interrupted after the rename: %v", err)
		}
		o.Migrated = func(string, string, int) { t.Error("migrated twice") }
		s, _, err := OpenFile(reg, o)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if u := s.Usage(); u.Entries != len(rows) {
			t.Fatalf("%d entries, want %d", u.Entries, len(rows))
		}
		if exists(old) || !bytes.Equal(mustRead(t, old+".migrated-20261122"), before) || !exists(log) {
			t.Fatal("the migration was not finished")
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMigrationIsOneWay: once migrated, the log alone is the ledger. A
// reopen does not migrate again (which would bring back the running entry
// the log has since finished, and run its handler twice); the file kept
// aside is never read; and a bbolt ledger found again at the old name
// beside the log (an older agent started after the upgrade) is refused
// rather than merged or ignored, changing nothing.
func TestMigrationIsOneWay(t *testing.T) {
	c := newClock()
	reg, old, log, o := layout(t, false, c)
	oldLedger(t, old, c)
	s, _, err := OpenFile(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := New(s, Options{Now: c.Now})
	st, _ := l.Start("did:key:zOther", id(1), c.Now().Add(time.Hour))
	if st.State != Lost {
		t.Fatalf("running entry: %s", st.State)
	}
	st.Ticket.Finish([]byte("outcome unknown"))
	s.Close()
	aside := old + ".migrated-20261122"
	kept := mustRead(t, aside)

	o.Migrated = func(string, string, int) { t.Error("migrated again") }
	s, _, err = OpenFile(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	l, _ = New(s, Options{Now: c.Now})
	if st, _ := l.Start("did:key:zOther", id(1), c.Now().Add(time.Hour)); st.State != Done || string(st.Reply) != "outcome unknown" {
		t.Fatalf("after a reopen: %s %q", st.State, st.Reply)
	}
	s.Close()
	if !bytes.Equal(mustRead(t, aside), kept) {
		t.Fatal("the file kept aside changed")
	}

	// An older agent wrote a new bbolt ledger at the old name.
	writeBoltLedger(t, old, []boltRow{{Key{Sender: "did:key:zNew", ID: id(7)}, Record{Expires: c.Now().Add(time.Hour), Reply: []byte("new")}}})
	oldBytes, logBytes := mustRead(t, old), mustRead(t, log)
	if _, _, err := OpenFile(reg, o); amp.NameOf(err) != ErrLedgerMigration {
		t.Fatalf("a bbolt ledger beside the log: %v", err)
	}
	if !bytes.Equal(mustRead(t, old), oldBytes) || !bytes.Equal(mustRead(t, log), logBytes) {
		t.Fatal("a refused open changed a file")
	}
}
