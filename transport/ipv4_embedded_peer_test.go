package transport

import "testing"

// TestIPv4EmbeddedInIPv6IsItsIPv4Peer: three IPv6 prefixes carry an
// IPv4 address inside the address (RFC 3056 6to4, 2002::/16; RFC 6052
// NAT64's well-known prefix, 64:ff9b::/96; RFC 4380 Teredo, 2001::/32);
// Peer names such an address by the IPv4 address it embeds (the
// client's, for Teredo), as it names an IPv4-mapped one
// (docs/SPEC-DECISIONS.md TRANSPORT-10). Threats, when each was taken
// for an ordinary /64:
//
//   - 6to4: whoever holds one IPv4 address holds 2002:V4::/48, 65,536
//     /64s, each a peer with its own connection, request and byte
//     shares, where the house counts IPv4 by address.
//   - NAT64 (an IPv6-only server behind a stateless translator, RFC
//     7755): every IPv4 caller arrives in 64:ff9b::/64, one peer, so one
//     IPv4 caller filling its share had every other IPv4 caller refused.
//   - Teredo: every client of one Teredo server is in the same /64 (the
//     server's address is the second 32 bits): one peer for all of them,
//     and one client got a share per server it qualified with.
func TestIPv4EmbeddedInIPv6IsItsIPv4Peer(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		// 6to4: 2002:c000:0201::/48 is 192.0.2.1's.
		{"[2002:c000:201:1::1]:443", "192.0.2.1"},
		{"[2002:c000:201:ffff::9]:443", "192.0.2.1"},
		// NAT64, the well-known prefix.
		{"[64:ff9b::c000:201]:443", "192.0.2.1"},
		{"[64:ff9b::c633:6401]:443", "198.51.100.1"},
		// Teredo (RFC 4380 §4's example: server 65.54.227.120,
		// client 192.0.2.45 behind its NAT, obfuscated).
		{"[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443", "192.0.2.45"},
		// Native IPv6 next to those prefixes keeps its /64.
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		{"[2003::1]:443", "2003::/64"},
		{"[64:ff9b:1::1]:443", "64:ff9b:1::/64"},
	} {
		if got := Peer(tc.addr); got != tc.want {
			t.Errorf("Peer(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
