package main

import (
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
)

// TestStrangerCannotExhaustAnotherStrangersSlots: attack: under an open
// policy ("*" rule) one stranger invokes a slow program again and again
// from its address. Every unnamed caller was one principal, so its
// programs took the whole unnamed share (4 of the default 16) and every
// other stranger, from any address, got programs_busy until they ended
// (CLI-37's cost left open). The callers of one peer (an IPv4 address,
// an IPv6 /48, as the listeners count them) hold 1/peer_share of the
// unnamed share, at least 1; another peer's stranger still starts, the
// unnamed share still bounds them all, and a named caller is not
// counted by its peer (CLI-41).
func TestStrangerCannotExhaustAnotherStrangersSlots(t *testing.T) {
	stranger := func(peer string) (context.Context, agent.Admission) {
		return admission.WithPeer(context.Background(), peer), agent.Admission{Capability: "org.example.slow:1.0.0", Caller: "did:key:z6Mkstranger", Principal: agent.SharedPrincipal}
	}
	named := agent.Admission{Capability: "org.example.slow:1.0.0", Caller: "did:key:z6Mknamed", Principal: "did:key:z6Mknamed"}
	for _, tc := range []struct {
		name          string
		most, peers   int    // max_programs, peer_share
		flood         string // the flooding stranger's peer
		other         string // another stranger's peer
		floodGets     int    // the flooder's slots
		otherAdmitted bool
	}{
		{"defaults, two IPv4 addresses", 0, 0, "192.0.2.1", "192.0.2.2", 1, true},
		{"defaults, two /64s of one IPv6 /48 are one peer", 0, 0, "2001:db8:1:1::/64", "2001:db8:1:2::/64", 1, false},
		{"defaults, two IPv6 /48s", 0, 0, "2001:db8:1:1::/64", "2001:db8:2:1::/64", 1, true},
		{"64 programs: 4 a peer", 64, 0, "192.0.2.1", "192.0.2.2", 4, true},
		{"peer_share 1 (behind a proxy): the unnamed share", 16, 1, "192.0.2.1", "192.0.2.2", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newProgramSlots(tc.most, tc.peers)
			var releases []func()
			for range 64 {
				ctx, in := stranger(tc.flood)
				release, err := s.admit(ctx, in)
				if err != nil {
					if amp.NameOf(err) != ErrProgramsBusy {
						t.Fatalf("refused with %v, want programs_busy", err)
					}
					break
				}
				releases = append(releases, release)
			}
			if len(releases) != tc.floodGets {
				t.Fatalf("one peer's stranger holds %d programs, want %d", len(releases), tc.floodGets)
			}
			ctx, in := stranger(tc.other)
			if _, err := s.admit(ctx, in); (err == nil) != tc.otherAdmitted {
				t.Fatalf("another stranger's program: %v, want admitted %v", err, tc.otherAdmitted)
			}
			if _, err := s.admit(context.Background(), named); err != nil {
				t.Fatalf("a named caller's program refused: %v", err)
			}
			// A peer with no program running is forgotten: the map holds
			// no more entries than programs run.
			for _, release := range releases {
				release()
			}
			if n := len(s.byPeer); n > 1 {
				t.Fatalf("%d peers still counted once the flooder's programs ended", n)
			}
		})
	}
}
