package transport

import "testing"

// TestPeerGroupsWhatOnePartyControls: the addresses one party can use
// freely are one peer (threat: a host opening many connections, or using
// many addresses of its IPv6 network, to hold more than its share).
func TestPeerGroupsWhatOnePartyControls(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"10.0.0.7:40000", "10.0.0.7:40001"},
		{"[2001:db8:1:2::1]:443", "[2001:db8:1:2:ffff::9]:80"},
		{"[::ffff:10.0.0.7]:1", "10.0.0.7:2"},
		{"pipe", "pipe"},
	} {
		if Peer(tc.a) != Peer(tc.b) {
			t.Errorf("%s and %s are different peers: %q, %q", tc.a, tc.b, Peer(tc.a), Peer(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"10.0.0.7:40000", "10.0.0.8:40000"},
		{"[2001:db8:1:2::1]:443", "[2001:db8:1:3::1]:443"},
	} {
		if Peer(tc.a) == Peer(tc.b) {
			t.Errorf("%s and %s are one peer %q", tc.a, tc.b, Peer(tc.a))
		}
	}
}
