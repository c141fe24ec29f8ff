package ledger

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestReservationOfItsOwnIsChargedAndHonoured: a ticket given a
// reservation of its own (a capability whose largest result is larger, or
// smaller, than the default) reserves exactly that in the caller's share
// before the handler runs, records a reply up to that size, refuses a
// larger one, and gives back what the reply does not use; a store reopened
// keeps the recorded reply (threat, issue 29 item 2 review: one fixed
// 256 KiB reservation for every capability, so a 300 KiB result ran its
// handler every time and was never delivered).
func TestReservationOfItsOwnIsChargedAndHonoured(t *testing.T) {
	const big = 512 << 10
	lim := Limits{Budget: 64 << 20, PerCaller: 1 << 20}
	for name, open := range stores(lim) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s, reopen := open(t, c)
			l, err := New(s, Options{Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := l.Limits(); !ok || got.PerCaller != lim.PerCaller || got.ReplyReserve != lim.PerCaller/8 {
				t.Fatalf("Limits() = %+v, %v", got, ok)
			}
			start := func(i int, reserve int64) *Ticket {
				t.Helper()
				st, err := l.Start("did:key:zBig", id(i), c.Now().Add(time.Hour))
				if err != nil || st.State != Fresh {
					t.Fatal(st.State, err)
				}
				st.Ticket.Reserve(reserve)
				return st.Ticket
			}
			first := start(1, big)
			if err := first.Running(); err != nil {
				t.Fatal(err)
			}
			if u := l.Usage().Bytes; u < big {
				t.Fatalf("a running entry of a %d-byte reservation counts %d bytes", big, u)
			}
			// A second one of the same caller does not fit the 1 MiB share
			// beside the first: refused before its handler would run.
			second := start(2, big)
			if err := second.Running(); amp.NameOf(err) != ErrCallerFull {
				t.Fatalf("a second %d-byte reservation in a 1 MiB share: %v, want %s", big, err, ErrCallerFull)
			}
			second.Abandon()
			// A smaller reservation of its own still fits beside it.
			small := start(3, 8<<10)
			if err := small.Running(); err != nil {
				t.Fatalf("an 8 KiB reservation beside a 512 KiB one: %v", err)
			}
			if err := small.Finish(make([]byte, 8<<10+1)); amp.NameOf(err) != ErrReplyTooLarge {
				t.Fatalf("a reply over an 8 KiB reservation: %v", err)
			}
			if err := small.Finish([]byte("ok")); err != nil {
				t.Fatal(err)
			}
			// Over its reservation: refused, nothing charged.
			before := l.Usage().Bytes
			if err := first.Finish(make([]byte, big+1)); amp.NameOf(err) != ErrReplyTooLarge {
				t.Fatalf("a reply over its reservation: %v", err)
			}
			if l.Usage().Bytes != before {
				t.Fatal("a refused reply changed the accounted bytes")
			}
			// Larger than the default reservation, within its own: recorded.
			reply := bytes.Repeat([]byte{'r'}, 300<<10)
			if err := first.Finish(reply); err != nil {
				t.Fatalf("a 300 KiB reply within a 512 KiB reservation: %v", err)
			}
			if u := l.Usage().Bytes; u > before-(big-int64(len(reply)))+1 || u < int64(len(reply)) {
				t.Fatalf("after the reply, %d bytes are accounted (before %d): the unused reservation was not given back", u, before)
			}
			if reopen == nil {
				return
			}
			s2 := reopen()
			rec, ok, err := s2.Lookup(Key{Sender: "did:key:zBig", ID: id(1)})
			if err != nil || !ok || !bytes.Equal(rec.Reply, reply) {
				t.Fatalf("after a reopen: %v %v, %d bytes", ok, err, len(rec.Reply))
			}
		})
	}
}

// TestMaxReserveFitsOneShare: MaxReserve is the largest reservation that
// one caller's share can hold with the entry's own bytes; one of that size
// runs, one byte more never would (threat: a capability configured with a
// largest result that no share can hold, refused 3005 for ever).
func TestMaxReserveFitsOneShare(t *testing.T) {
	lim := Limits{Budget: 8 << 20, PerCaller: 1 << 20}
	m := lim.MaxReserve()
	if m <= 0 || m >= lim.PerCaller {
		t.Fatalf("MaxReserve %d for a share of %d", m, lim.PerCaller)
	}
	for name, open := range stores(lim) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s, _ := open(t, c)
			rs := s.(ReservingStore)
			sender := "did:key:z" + string(bytes.Repeat([]byte{'k'}, maxReserveSender-9))
			if err := rs.MarkRunningWithin(Key{Sender: sender, ID: id(1)}, c.Now().Add(time.Hour), m); err != nil {
				t.Fatalf("MaxReserve (%d) for a %d-byte sender: %v", m, len(sender), err)
			}
			for i := 2; i < 4; i++ {
				err := rs.MarkRunningWithin(Key{Sender: fmt.Sprintf("did:key:z%d", i), ID: id(i)}, c.Now().Add(time.Hour), lim.PerCaller)
				if amp.NameOf(err) != ErrCallerFull {
					t.Fatalf("a reservation of a whole share: %v", err)
				}
			}
		})
	}
}
