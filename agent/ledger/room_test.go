package ledger

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestFullShareRefusesRunningNeverTheReply: every store reserves the
// largest reply when an entry is marked running, so once a share is full
// the refusal (3005) comes from Running, before a handler could run, and
// a reply within the reservation is always recorded (threat: a full share
// still running handlers whose results it then cannot record: 281 handler
// runs for 280 + 1 invocations, 79 unrecorded). A reply over the
// reservation is refused with reply_too_large, never charged.
func TestFullShareRefusesRunningNeverTheReply(t *testing.T) {
	const reserve = DefaultReplyReserve // = PerCaller/8: the default reservation
	lim := Limits{Budget: 64 << 20, PerCaller: 2 << 20}
	for name, open := range stores(lim) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s, _ := open(t, c)
			l, err := New(s, Options{Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			l.SetPrincipal(shared)
			reply := bytes.Repeat([]byte{'r'}, 150<<10)
			ran, recorded, refused := 0, 0, 0
			for i := 0; i < 40; i++ {
				st, err := l.Start(fmt.Sprintf("anon-%02d", i), id(i), c.Now().Add(7*24*time.Hour))
				if err != nil || st.State != Fresh {
					t.Fatal(st.State, err)
				}
				if err := st.Ticket.Running(); err != nil {
					if amp.NameOf(err) != ErrCallerFull || !amp.CodeOf(err).Retryable() {
						t.Fatalf("invocation %d refused with %v, want a retryable %s", i, err, ErrCallerFull)
					}
					st.Ticket.Abandon()
					refused++
					continue
				}
				ran++ // the handler would run now
				if err := st.Ticket.Finish(reply); err != nil {
					t.Fatalf("invocation %d: the handler ran and its %d-byte reply was refused: %v", i, len(reply), err)
				}
				recorded++
			}
			if refused == 0 || ran != recorded {
				t.Fatalf("%d handler runs, %d replies recorded, %d refused before running", ran, recorded, refused)
			}
			if u := l.Usage(); u.Bytes > lim.PerCaller {
				t.Fatalf("the shared principal holds %d bytes, its share is %d", u.Bytes, lim.PerCaller)
			}
			// Over the reservation: refused, nothing charged; a small
			// answer then fits.
			st, _ := l.Start("did:key:named", id(99), c.Now().Add(time.Hour))
			if err := st.Ticket.Running(); err != nil {
				t.Fatal(err)
			}
			before := l.Usage().Bytes
			if err := st.Ticket.Finish(make([]byte, reserve+1)); amp.NameOf(err) != ErrReplyTooLarge || !NoRoom(err) {
				t.Fatalf("a reply over its reservation: %v, want %s", err, ErrReplyTooLarge)
			}
			if l.Usage().Bytes != before {
				t.Fatalf("a refused reply changed the accounted bytes from %d to %d", before, l.Usage().Bytes)
			}
			if err := st.Ticket.Finish([]byte("small")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// diskFull is a WALOptions.Room that refuses every growth of the log once
// full is set, as a file system with no free block would (ENOSPC). It
// counts the bytes it refused.
type diskFull struct {
	full    atomic.Bool
	refused atomic.Int64
}

func (d *diskFull) room(add int64) error {
	if d.full.Load() {
		d.refused.Add(add)
		return &osPathError{err: syscall.ENOSPC}
	}
	return nil
}

type osPathError struct{ err error }

func (e *osPathError) Error() string { return "write l.wal: " + e.err.Error() }
func (e *osPathError) Unwrap() error { return e.err }

// TestFullDiskRefusesRunningNeverTheReply: through the log's Room seam
// (a simulated disk that has no free block left), entries marked running
// before the disk filled still record replies of the full reservation —
// also while the compaction the log wants cannot be written — and a new
// entry is refused before its handler could run, retryably (5004
// ledger_no_space), with nothing written (threat: a full disk turning
// into successes that were sent but never recorded, which a retry then
// answers outcome_unknown). Reopened, every reply replays.
func TestFullDiskRefusesRunningNeverTheReply(t *testing.T) {
	const reserve = 64 << 10
	c := newClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	disk := &diskFull{}
	// A slack of one byte: every group would compact first.
	s := openTestWAL(t, path, c, WALOptions{Limits: Limits{ReplyReserve: reserve}, Room: disk.room, Slack: 1})
	l, err := New(s, Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	const running = 24 // 24 reservations of 64 KiB: past the 1 MiB spare reserve
	var tickets []*Ticket
	for i := 0; i < running; i++ {
		st, err := l.Start("did:key:zA", id(i), c.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Ticket.Running(); err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, st.Ticket)
	}
	disk.full.Store(true)
	// What zeros the file already has beyond the reservations (the spare
	// reserve) take a few more entries; then the refusal.
	refusedAt := -1
	for i := running; i < running+64 && refusedAt < 0; i++ {
		st, err := l.Start("did:key:zA", id(i), c.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		size := s.FileSize()
		if err := st.Ticket.Running(); err != nil {
			if amp.NameOf(err) != ErrNoSpace || amp.CodeOf(err) != amp.CodeOverloaded || !NoRoom(err) {
				t.Fatalf("a new entry on a full disk: %v, want a retryable 5004 %s", err, ErrNoSpace)
			}
			if s.FileSize() != size {
				t.Fatal("the refused entry was written")
			}
			st.Ticket.Abandon()
			refusedAt = i
			continue
		}
		tickets = append(tickets, st.Ticket)
	}
	if refusedAt < 0 {
		t.Fatal("64 more entries were accepted on a full disk")
	}
	for i, tk := range tickets {
		if err := tk.Finish(bytes.Repeat([]byte{byte(i)}, reserve)); err != nil {
			t.Fatalf("reply %d of an entry accepted before the disk filled: %v", i, err)
		}
	}
	if disk.refused.Load() == 0 {
		t.Fatal("the simulated disk was never asked for room: the test proves nothing")
	}
	s.Close()
	s = openTestWAL(t, path, c, WALOptions{})
	defer s.Close()
	for i := 0; i < refusedAt; i++ {
		rec, ok, err := s.Lookup(Key{Sender: "did:key:zA", ID: id(i)})
		if err != nil || !ok || !bytes.Equal(rec.Reply, bytes.Repeat([]byte{byte(i)}, reserve)) {
			t.Fatalf("reply %d after reopening: %v %v", i, ok, err)
		}
	}
	if _, ok, _ := s.Lookup(Key{Sender: "did:key:zA", ID: id(refusedAt)}); ok {
		t.Fatal("the refused entry is in the log")
	}
}

// TestAbandonedRunningEntryGivesBackItsDisk: a running ticket abandoned
// without a reply (the reply could not be built) gives back the disk it
// reserved, so that such tickets cannot pin the disk until restart
// (threat: reservations leaking until every new entry is refused).
func TestAbandonedRunningEntryGivesBackItsDisk(t *testing.T) {
	c := newClock()
	s := openTestWAL(t, filepath.Join(t.TempDir(), "l.wal"), c, WALOptions{Limits: Limits{ReplyReserve: 4 << 10}})
	defer s.Close()
	l, _ := New(s, Options{Now: c.Now})
	st, _ := l.Start("did:key:zA", id(1), c.Now().Add(time.Hour))
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if s.reserved == 0 {
		t.Fatal("no disk reserved for a running entry")
	}
	st.Ticket.Abandon()
	if s.reserved != 0 {
		t.Fatalf("%d bytes still reserved after the ticket was abandoned", s.reserved)
	}
}
