package admission

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestManySlash64sOfOneNetworkShareItsTurn: the attack: one party holding
// an ordinary IPv6 allocation (a /48: 65,536 /64 networks; a /56 still
// has 256) sends, from 16 of its /64s, one invocation each whose params
// cost up to MaxValidationCost (seconds of CPU) to validate — each /64
// well within its own share, one message in flight. A well-behaved caller
// at another network sends one invocation; another caller holds one slot.
//
// Before: the gate's peer was the /64 (transport.Peer), so the 16 /64s
// were 16 peers, each with a turn of its own, and each took a slot while
// it had nothing inside: the caller's message waited behind the 13
// queued before it, about 3 validations end to end, and each slot that
// freed went to the next /64 of the same network.
//
// Now: the /64s of one /48 are one peer (Network) whose /64s take turns
// within its turn, so the network holds its share (the other caller's
// count plus one) and the caller finds a slot at once, or the next that
// frees.
func TestManySlash64sOfOneNetworkShareItsTurn(t *testing.T) {
	const caller, other = "198.51.100.7", "203.0.113.9"
	f := NewFair(4, DefaultPeerQueue)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return at }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	otherDone := enter(t, f, other)

	// 16 /64s of 2001:db8:1::/48 (as transport.Peer names them), one
	// message each.
	var flood []<-chan entered
	for i := range 16 {
		flood = append(flood, queued(f, ctx, fmt.Sprintf("2001:db8:1:%x::/64", i)))
		time.Sleep(2 * time.Millisecond) // in order
	}
	time.Sleep(50 * time.Millisecond)
	var inside []func()
	for i, c := range flood {
		select {
		case e := <-c:
			inside = append(inside, e.done)
			flood[i] = nil
		default:
		}
	}
	victim := queued(f, ctx, caller)
	time.Sleep(20 * time.Millisecond)

	// One of the network's validations ends: a slot frees.
	if len(inside) > 0 {
		inside[0]()
		inside = inside[1:]
	}
	var got entered
	granted := false
	select {
	case got = <-victim:
		granted = got.err == nil
	case <-time.After(200 * time.Millisecond):
	}
	if !granted {
		t.Errorf("one /48 had %d messages inside, from %d of its /64s, and a slot freed; the caller from another network still waits: want it served first", len(inside)+1, len(inside)+1)
	}

	// Clean up: the waiting messages give up or end; the others end.
	cancel()
	if !granted {
		got = <-victim
	}
	if got.err == nil {
		got.done()
	}
	drain(flood)
	for _, done := range inside {
		done()
	}
	otherDone()
}

// TestSlash64sOfOneNetworkTakeTurnsWithinIt: within a /48, its /64s take
// turns (one flooding /64 does not make its neighbours wait behind all of
// its messages), and each /64's queue keeps its own bound.
func TestSlash64sOfOneNetworkTakeTurnsWithinIt(t *testing.T) {
	const flooder, neighbour = "2001:db8:1:1::/64", "2001:db8:1:2::/64"
	f := NewFair(1, 2)
	holder := enter(t, f, "198.51.100.7")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var order []string
	var got []<-chan entered
	for range 2 {
		got = append(got, queued(f, ctx, flooder))
		waitQueued(t, f, flooder, len(got))
	}
	if _, _, err := f.Enter(WithPeer(ctx, flooder)); err == nil {
		t.Fatal("a /64 past its queue bound was admitted")
	}
	n := queued(f, ctx, neighbour)
	waitQueued(t, f, neighbour, 1)
	holder()
	sources := append([]<-chan entered{}, got...)
	sources = append(sources, n)
	names := []string{flooder, flooder, neighbour}
	for range 3 {
		for i, c := range sources {
			if c == nil {
				continue
			}
			select {
			case e := <-c:
				order = append(order, names[i])
				sources[i] = nil
				e.done()
			case <-time.After(5 * time.Millisecond):
				continue
			}
			break
		}
	}
	if len(order) < 2 || order[1] != neighbour {
		t.Fatalf("grant order %v; want the neighbour /64 second, between the flooder's", order)
	}
}

// TestNetworkOfIPv6IsItsSlash48: what a share is counted by.
func TestNetworkOfIPv6IsItsSlash48(t *testing.T) {
	for in, want := range map[string]string{
		"198.51.100.7":         "198.51.100.7",
		"2001:db8:1:2::/64":    "2001:db8:1::/48",
		"2001:db8:1:ff00::/64": "2001:db8:1::/48",
		"2001:db8:abcd:12::5":  "2001:db8:abcd::/48",
		"":                     "",
		"not an address":       "not an address",
		"::ffff:198.51.100.7":  "::ffff:198.51.100.7",
		"2001:db8:1:2::/32":    "2001:db8:1:2::/32",
		"2001:db8:1:2::/128":   "2001:db8:1::/48",
		"[2001:db8::1]:443":    "[2001:db8::1]:443",
	} {
		if got := Network(in); got != want {
			t.Errorf("Network(%q) = %q, want %q", in, got, want)
		}
	}
}
