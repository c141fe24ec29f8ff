package ledger

import (
	"bytes"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestDuplicateValidLongerExtendsItsEntry: for every store, a verified
// duplicate of a message whose expiry is later than its entry's (the
// same id and ts re-signed with a longer ttl) moves the entry's expiry
// to its own, done or running, durably (the write-ahead log keeps it
// across a reopen). Threat: the entry kept the first copy's expiry and
// was swept then, while the duplicate, still valid, could be replayed
// and run the handler a second time.
func TestDuplicateValidLongerExtendsItsEntry(t *testing.T) {
	for name, open := range stores(Limits{}) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s, reopen := open(t, c)
			l, err := New(s, Options{Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			const sender = "did:key:caller"
			first, longer := t0.Add(time.Minute), t0.Add(time.Hour)
			// Done: id 1; running (its process gone): id 2.
			st, err := l.Start(sender, id(1), first)
			if err != nil || st.State != Fresh {
				t.Fatal(st.State, err)
			}
			if err := st.Ticket.Running(); err != nil {
				t.Fatal(err)
			}
			if err := st.Ticket.Finish([]byte("reply")); err != nil {
				t.Fatal(err)
			}
			st, err = l.Start(sender, id(2), first)
			if err != nil || st.State != Fresh {
				t.Fatal(st.State, err)
			}
			if err := st.Ticket.Running(); err != nil {
				t.Fatal(err)
			}
			st.Ticket.Abandon() // left running: Lost
			dup, err := l.Start(sender, id(1), longer)
			if err != nil || dup.State != Done || !bytes.Equal(dup.Reply, []byte("reply")) {
				t.Fatalf("the duplicate: %v %q %v, want done", dup.State, dup.Reply, err)
			}
			lost, err := l.Start(sender, id(2), longer)
			if err != nil || lost.State != Lost {
				t.Fatalf("the duplicate of the running one: %v %v, want lost", lost.State, err)
			}
			lost.Ticket.Abandon()
			if reopen != nil {
				s = reopen()
				if l, err = New(s, Options{Now: c.Now}); err != nil {
					t.Fatal(err)
				}
			}
			c.Add(5 * time.Minute) // past the first copies' expiry, within the duplicates'
			if n, err := l.Sweep(c.Now()); err != nil || n != 0 {
				t.Fatalf("the sweep at the first copies' expiry reclaimed %d entries (%v): a replay of the duplicates, "+
					"valid for most of an hour more, would run the handler again", n, err)
			}
			if again, err := l.Start(sender, id(1), longer); err != nil || again.State != Done {
				t.Fatalf("a replay of the duplicate after the first copy's expiry: %v %v, want done", again.State, err)
			}
			if again, err := l.Start(sender, id(2), longer); err != nil || again.State != Lost {
				t.Fatalf("a replay of the running one's duplicate: %v %v, want lost", again.State, err)
			} else {
				again.Ticket.Abandon()
			}
			c.Add(time.Hour)
			if n, err := l.Sweep(c.Now()); err != nil || n != 2 {
				t.Fatalf("the sweep after the duplicates' expiry reclaimed %d entries (%v), want 2", n, err)
			}
		})
	}
}

// notExtending is a store that cannot extend an entry.
type notExtending struct{ Store }

// TestDuplicateValidLongerIsRefusedWhereTheStoreCannotExtend: over a
// store that cannot move an entry's expiry, such a duplicate is refused,
// retryable, and nothing is answered from the entry (the entry would be
// swept while the duplicate is still valid).
func TestDuplicateValidLongerIsRefusedWhereTheStoreCannotExtend(t *testing.T) {
	c := newClock()
	l, err := New(notExtending{NewMemory(Limits{})}, Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Start("did:key:caller", id(1), t0.Add(time.Minute))
	if err != nil || st.State != Fresh {
		t.Fatal(st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if err := st.Ticket.Finish([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if same, err := l.Start("did:key:caller", id(1), t0.Add(time.Minute)); err != nil || same.State != Done {
		t.Fatalf("a duplicate valid as long: %v %v, want done", same.State, err)
	}
	dup, err := l.Start("did:key:caller", id(1), t0.Add(time.Hour))
	if amp.NameOf(err) != ErrCannotExtend || !amp.CodeOf(err).Retryable() || dup.Reply != nil {
		t.Fatalf("a duplicate valid longer over a store that cannot extend: %v %q %v, want %s (retryable), nothing answered",
			dup.State, dup.Reply, err, ErrCannotExtend)
	}
}
