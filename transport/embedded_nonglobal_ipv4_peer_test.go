package transport

import (
	"net/netip"
	"testing"
)

// TestEmbeddedNonGlobalIPv4IsNotThatPeer: Peer names an IPv6
// address that embeds an IPv4 address (6to4, NAT64's well-known prefix,
// Teredo) by that IPv4 address (TRANSPORT-10). Attack: a caller whose
// 6to4, NAT64 or Teredo address embeds a loopback, private, shared (CGN),
// link-local, multicast, unspecified or broadcast IPv4 address. No such
// address is valid (RFC 3056 §2 and RFC 3964 §5.1: a 6to4 prefix is a
// global IPv4 address's, routers drop the others; RFC 6052 §3.1: the
// well-known prefix MUST NOT carry a non-global IPv4 address; RFC 4380:
// the Teredo client's mapped address is its NAT's public one), so it
// names nobody the server knows by that IPv4 address: a packet from it
// was routed by whoever answers for 2002::/16, 64:ff9b::/96 or 2001::/32
// on its path (a relay, in whose own network 10.0.0.5 or 127.0.0.1 is
// someone else). It was that IPv4 peer: "127.0.0.1" (the operator's
// own tools, a health check, a local reverse proxy) or "10.0.0.5" (a
// host of the server's LAN), whose connection, request, byte and linger
// shares the stranger then filled. It is an IPv6 peer of its own, never
// an IPv4 address's key (docs/SPEC-DECISIONS.md TRANSPORT-13).
func TestEmbeddedNonGlobalIPv4IsNotThatPeer(t *testing.T) {
	for _, tc := range []struct{ what, addr string }{
		{"6to4 of loopback 127.0.0.1", "[2002:7f00:1:1::1]:443"},
		{"6to4 of private 10.0.0.5", "[2002:a00:5:1::1]:443"},
		{"6to4 of private 172.16.0.1", "[2002:ac10:1::1]:443"},
		{"6to4 of private 192.168.1.1", "[2002:c0a8:101::1]:443"},
		{"6to4 of shared (CGN) 100.64.0.1", "[2002:6440:1::1]:443"},
		{"6to4 of link-local 169.254.0.1", "[2002:a9fe:1::1]:443"},
		{"6to4 of multicast 224.0.0.1", "[2002:e000:1::1]:443"},
		{"6to4 of 0.0.0.0", "[2002::1]:443"},
		{"6to4 of 0.1.2.3 (this network)", "[2002:1:203::1]:443"},
		{"6to4 of reserved 240.0.0.1", "[2002:f000:1::1]:443"},
		{"6to4 of broadcast 255.255.255.255", "[2002:ffff:ffff::1]:443"},
		{"NAT64 of loopback 127.0.0.1", "[64:ff9b::7f00:1]:443"},
		{"NAT64 of private 10.0.0.5", "[64:ff9b::a00:5]:443"},
		{"NAT64 of 0.0.0.0", "[64:ff9b::]:443"},
		// Teredo's client address is inverted: 127.0.0.1 is 80ff:fffe.
		{"Teredo of loopback 127.0.0.1", "[2001:0:4136:e378:8000:63bf:80ff:fffe]:443"},
		{"Teredo of private 10.0.0.5", "[2001:0:4136:e378:8000:63bf:f5ff:fffa]:443"},
		{"Teredo of broadcast", "[2001:0:4136:e378:8000:63bf:0:0]:443"},
	} {
		got := Peer(tc.addr)
		if a, err := netip.ParseAddr(got); err == nil && a.Is4() {
			t.Errorf("%s: Peer(%s) = %q: the IPv4 peer of that address, whom this caller is not", tc.what, tc.addr, got)
			continue
		}
		p, err := netip.ParsePrefix(got)
		if err != nil || !p.Contains(netip.MustParseAddrPort(tc.addr).Addr()) {
			t.Errorf("%s: Peer(%s) = %q, want an IPv6 network holding the address", tc.what, tc.addr, got)
		}
	}
}
