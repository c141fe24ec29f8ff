package transport

import "testing"

// TestAdmissionCountsASitesRequestsTogether: the request share of
// Admission (amphttp's MaxPeerInFlight, the catalog's and the MCP
// bridge's slots) is a site's, every /64 of an IPv6 /48 together (threat:
// four /64s of one /48 each took a peer's share, and so every slot:
// docs/SPEC-DECISIONS.md TRANSPORT-28), and a slot comes back to the
// site however its request ends (Leave, Answer); the byte shares stay
// per /64 (docs/TRANSPORT.md §4).
func TestAdmissionCountsASitesRequestsTogether(t *testing.T) {
	const a1, a2, other = "2001:db8:69:1::/64", "2001:db8:69:2::/64", "198.51.100.7"
	for _, end := range []struct {
		name string
		end  func(a *Admission, peer string)
	}{
		{"leave", func(a *Admission, peer string) { a.Leave(peer, 0) }},
		{"answer", func(a *Admission, peer string) { a.Answer(peer, 0, 0, 0, 10); a.ReleaseReply(peer, 10) }},
	} {
		t.Run(end.name, func(t *testing.T) {
			a := NewAdmission(8, 2, 1<<20, 1<<18)
			for _, p := range []string{a1, a1} {
				if what := a.Enter(p); what != "" {
					t.Fatalf("the site's first two requests: %q", what)
				}
			}
			if what := a.Enter(a2); what != "peer_requests" {
				t.Fatalf("another /64 of the site over its share: %q, want peer_requests", what)
			}
			if what := a.Enter(other); what != "" {
				t.Fatalf("another caller: %q, want admitted", what)
			}
			end.end(a, a1)
			if what := a.Enter(a2); what != "" {
				t.Fatalf("the site's slot did not come back: %q", what)
			}
			// Bytes still count by /64: a2 has its own byte share.
			if !a.ChargePeer(a1, 1<<18) || !a.ChargePeer(a2, 1<<18) {
				t.Fatal("the byte shares of two /64s of one site are not their own")
			}
			a.LeaveHeld(a1, 1<<18, 0)
			a.LeaveHeld(a2, 1<<18, 0)
			a.Leave(other, 0)
			if len(a.peers) != 0 || len(a.sites) != 0 {
				t.Fatalf("what an idle admission still holds: %d peers, %d sites", len(a.peers), len(a.sites))
			}
		})
	}
}
