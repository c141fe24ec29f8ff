package transport

import "net/netip"

// Peer names the party a transport charges for what it holds on a
// connection's behalf (in-flight bytes): the IP address of remote (an
// address "host:port", as net.Conn.RemoteAddr().String() and
// http.Request.RemoteAddr give it), or for IPv6 its /64 network, since a
// host on such a network can use any of its addresses. An IPv6 address
// that carries an IPv4 address (IPv4-mapped; ipv4Embedded: 6to4, NAT64's
// well-known prefix, Teredo) is that IPv4 address: whoever holds an IPv4
// address holds its whole 6to4 /48, and every IPv4 caller behind a
// translator, or every client of one Teredo server, shares one /64
// (docs/SPEC-DECISIONS.md TRANSPORT-10); one that claims a non-global
// IPv4 address is not (a 6to4 one counts by its /48: TRANSPORT-13).
// Anything else (a pipe, a Unix socket) is one peer, named as given. The
// byte budgets count by this peer; the agent's processing slots and its
// streams count an IPv6 peer by its /48 (admission.Network: one site has
// 65,536 /64s to send from), its /64s taking turns within it
// (docs/TRANSPORT.md §4).
func Peer(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return a.String()
	}
	if v4, ok := ipv4Embedded(a); ok {
		return v4.String()
	}
	bits := 64
	if sixToFour.Contains(a) {
		// A 6to4 prefix whose IPv4 address is no one's (ipv4Embedded):
		// still one site's /48, never 65,536 peers.
		bits = 48
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// Prefixes of IPv6 addresses that carry an IPv4 address (ipv4Embedded).
var (
	sixToFour = netip.MustParsePrefix("2002::/16")    // RFC 3056: 2002:V4::/48
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052 well-known prefix: V4 in the last 32 bits
	teredo    = netip.MustParsePrefix("2001::/32")    // RFC 4380: the client's V4 in the last 32 bits, inverted
)

// notGlobal4 are the IPv4 networks that no 6to4 prefix, NAT64
// well-known-prefix address or Teredo client address may embed (RFC 3964
// §5.1, RFC 6052 §3.1, RFC 6890): "this network", private, shared (CGN),
// loopback, link-local, IETF protocol assignments, benchmarking,
// multicast, reserved and broadcast.
var notGlobal4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/3"), // multicast, reserved, broadcast
}

// ipv4Embedded returns the IPv4 address the IPv6 address a carries, the
// party behind it, and true: 6to4 (2002:V4::/48, V4 the address of the
// site), NAT64's well-known prefix (64:ff9b::V4, the caller behind the
// translator) and Teredo (2001:0:S:F:P:V4 inverted, the client's address
// behind its NAT). It returns false for any other address, and for one
// of those forms whose V4 is not a global address (notGlobal4): such an
// address is invalid, and names nobody the server knows by that IPv4
// address (a local tool on 127.0.0.1, a host of its LAN), only whoever
// routed it (docs/SPEC-DECISIONS.md TRANSPORT-13). Other translation
// prefixes (a network-specific NAT64 prefix) cannot be told from an
// address.
func ipv4Embedded(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	var v4 netip.Addr
	switch {
	case sixToFour.Contains(a):
		v4 = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case nat64.Contains(a):
		v4 = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case teredo.Contains(a):
		v4 = netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	default:
		return netip.Addr{}, false
	}
	for _, p := range notGlobal4 {
		if p.Contains(v4) {
			return netip.Addr{}, false
		}
	}
	return v4, true
}
