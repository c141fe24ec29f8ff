package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// unsignedTo is a message to dids with the id n, sent at the clock's
// time with a one-hour ttl: all Outbox.Add reads of a message.
func unsignedTo(p *parties, n uint64, dids ...string) *amp.Message {
	var id amp.ID
	binary.BigEndian.PutUint64(id[:], n)
	return &amp.Message{ID: id, Type: amp.TypePing, TS: uint64(p.clock.Now().UnixMilli()), TTL: 3_600_000,
		From: p.caller.DID, To: amp.ToList(dids...)}
}

// TestRefusedAddToAFullOutboxWalksNoEntry: four recipients that never
// report fill the outbox (Max entries, each its share) or their shares;
// a caller that retries the 5004 refusal then made every refused Add walk
// every entry under the outbox's lock (65,536 by default, about 5.6 ms
// each), keeping the lock from Receive and every other Add. Now a refused
// Add looks at one entry (the next to drop), and the refusals are the
// same: outbox_full into a full outbox, for any recipient,
// recipient_outbox_full into a full share.
func TestRefusedAddToAFullOutboxWalksNoEntry(t *testing.T) {
	const retries = 64
	cases := []struct {
		name  string
		share int // MaxPerRecipient as a part of Max
		to    int // the recipient of the refused adds: -1 a new one, else silent[to]
		want  amp.ErrName
	}{
		{"a new recipient into a full outbox", 4, -1, ErrOutboxFull},
		{"a silent recipient into a full outbox", 4, 0, ErrOutboxFull},
		{"a silent recipient into its full share", 8, 1, ErrRecipientOutboxFull},
	}
	for _, max := range []int{1 << 12, 1 << 16} {
		for _, c := range cases {
			t.Run(fmt.Sprint(max, " ", c.name), func(t *testing.T) {
				p := newParties(t)
				ob := mustOutbox(t, OutboxConfig{Max: max, MaxPerRecipient: max / c.share, Now: p.clock.Now})
				silent := []string{identity(t, 11).DID, identity(t, 12).DID, identity(t, 13).DID, identity(t, 14).DID}
				n := uint64(0)
				for i := range 4 * (max / c.share) {
					n++
					if err := ob.Add(unsignedTo(p, n, silent[i%len(silent)])); err != nil {
						t.Fatalf("entry %d: %v", i, err)
					}
				}
				p.clock.Add(time.Minute)
				to := p.provider.DID
				if c.to >= 0 {
					to = silent[c.to]
				}
				ob.mu.Lock()
				ob.visited = 0
				ob.mu.Unlock()
				for i := range retries {
					n++
					if err := ob.Add(unsignedTo(p, n, to)); amp.NameOf(err) != c.want {
						t.Fatalf("retry %d: %v, want %s", i, err, c.want)
					}
				}
				ob.mu.Lock()
				visited := ob.visited
				ob.mu.Unlock()
				if visited > retries {
					t.Errorf("%d refused adds (%d entries kept) looked at %d entries, want at most %d", retries, 4*(max/c.share), visited, retries)
				}
			})
		}
	}
}

// TestOutboxDropOrderHoldsThroughEveryChange: the sweep trusts the
// queue's order (final entries first, then by expiry) to stop at the
// first entry it may not drop; an entry that became final, or stopped
// being final (a retry reopening what a retryable answer or a relay's
// refusal settled), without its place fixed would hide entries a sweep
// must drop, and an Add would be refused where it was taken before.
// Random adds, retries, reports, answers, ACKs and clock steps on a small
// outbox; after each, every entry is in the queue at its index, the queue
// is in order for the entries' current states, and the shares count the
// recipients that have not settled.
func TestOutboxDropOrderHoldsThroughEveryChange(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 48, MaxPerRecipient: 20, Now: p.clock.Now})
	dids := []string{identity(t, 11).DID, identity(t, 12).DID, identity(t, 13).DID, identity(t, 14).DID}
	r := rand.New(rand.NewPCG(1, 2))
	var sent []*amp.Message
	pick := func() *amp.Message { // one of the last messages: most are still kept
		recent := sent[max(0, len(sent)-64):]
		return recent[r.IntN(len(recent))]
	}
	var accepted, refused, reopened int
	for step := range 40_000 {
		switch op := r.IntN(10); {
		case op < 2 || len(sent) == 0:
			m := unsignedTo(p, uint64(len(sent)+1), dids[r.IntN(4)])
			if r.IntN(3) == 0 {
				m.To = amp.ToList(dids[:1+r.IntN(4)]...)
			}
			m.TTL = uint64(1+r.IntN(30)) * 1000
			sent = append(sent, m)
			if ob.Add(m) == nil {
				accepted++
			} else {
				refused++
			}
		case op == 3: // the caller's retry through a peer: a recipient or a relay
			m := pick()
			peer := []string{dids[r.IntN(4)], p.stranger.DID}[r.IntN(2)]
			before, _ := ob.State(m.ID)
			_ = ob.add(m, peer)
			if after, _ := ob.State(m.ID); final(before.State) && !final(after.State) {
				reopened++
			}
		case op == 4:
			typ := []amp.Type{amp.TypeProcOK, amp.TypeProcFail, amp.TypeError}[r.IntN(3)]
			var id amp.ID
			id = pick().ID
			ob.Receive(context.Background(), amp.Receipt{Message: &amp.Message{Type: typ, From: dids[r.IntN(3)], ReplyTo: id[:]}}) // dids[3] never reports
		case op == 5:
			peer := []string{dids[r.IntN(4)], p.stranger.DID, ""}[r.IntN(3)]
			ob.answered(pick().ID, peer, answer(r.IntN(3)))
		case op == 6:
			ob.Delivered(pick().ID)
		case op == 7:
			ob.reportedAnswer(pick().ID, &amp.Message{Type: amp.TypeProcOK, From: dids[r.IntN(3)]})
		default:
			p.clock.Add(time.Duration(r.IntN(200)) * time.Millisecond)
		}
		checkDropOrder(t, ob, step)
	}
	if accepted == 0 || refused == 0 || reopened == 0 {
		t.Fatalf("accepted %d, refused %d, reopened %d: a path was not taken", accepted, refused, reopened)
	}
}

// checkDropOrder fails t unless ob's queue holds its entries in order and
// its shares count what they should.
func checkDropOrder(t *testing.T, ob *Outbox, step int) {
	t.Helper()
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if len(ob.queue) != len(ob.m) {
		t.Fatalf("step %d: %d entries, %d queued", step, len(ob.m), len(ob.queue))
	}
	held := map[string]int{}
	for i, e := range ob.queue {
		if e.at != i || ob.m[e.ID] != e {
			t.Fatalf("step %d: queue[%d] is not the entry kept at that place", step, i)
		}
		if i > 0 && ob.queue.Less(i, (i-1)/2) {
			t.Fatalf("step %d: queue[%d] comes before its parent", step, i)
		}
		for j, how := range e.settled {
			if how == unsettled {
				held[e.rcpts[j]]++
			}
		}
	}
	if !maps.Equal(held, ob.held) {
		t.Fatalf("step %d: shares %v, entries hold %v", step, ob.held, held)
	}
}

// BenchmarkRefusedAddToAFullOutbox: one refused Add to an outbox that
// four silent recipients filled (65,536 entries, the default Max).
func BenchmarkRefusedAddToAFullOutbox(b *testing.B) {
	p := newParties(b)
	ob, err := NewOutbox(OutboxConfig{Now: p.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	silent := []string{identity(b, 11).DID, identity(b, 12).DID, identity(b, 13).DID, identity(b, 14).DID}
	n := uint64(0)
	for i := range 1 << 16 {
		n++
		if err := ob.Add(unsignedTo(p, n, silent[i%len(silent)])); err != nil {
			b.Fatal(err)
		}
	}
	m := unsignedTo(p, n+1, p.provider.DID)
	for b.Loop() {
		if ob.Add(m) == nil {
			b.Fatal("taken")
		}
	}
}
