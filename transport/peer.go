package transport

import "net/netip"

// Peer names the party a transport charges for what it holds on a
// connection's behalf (in-flight bytes): the IP address of remote (an
// address "host:port", as net.Conn.RemoteAddr().String() and
// http.Request.RemoteAddr give it), or for IPv6 its /64 network, since a
// host on such a network can use any of its addresses. An IPv6 address
// that carries an IPv4 address (ipv4Embedded: IPv4-mapped, 6to4, NAT64's
// well-known prefix, Teredo) is that IPv4 address: whoever holds an IPv4
// address holds its whole 6to4 /48, and every IPv4 caller behind a
// translator, or every client of one Teredo server, shares one /64
// (docs/SPEC-DECISIONS.md TRANSPORT-10). Anything else (a pipe, a Unix socket) is one peer, named
// as given. The byte budgets count by this peer; the agent's processing
// slots and its streams count an IPv6 peer by its /48
// (admission.Network: one site has 65,536 /64s to send from), its /64s
// taking turns within it (docs/TRANSPORT.md §4).
func Peer(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	a := ipv4Embedded(ap.Addr())
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
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

// ipv4Embedded returns the IPv4 address a carries, the party behind it,
// or a unchanged: IPv4-mapped (::ffff:V4), 6to4 (2002:V4::/48, V4 the
// address of the site), NAT64's well-known prefix (64:ff9b::V4, the
// caller behind the translator) and Teredo (2001:0:S:F:P:V4 inverted, the
// client's address behind its NAT). Other translation prefixes (a
// network-specific NAT64 prefix) cannot be told from an address.
func ipv4Embedded(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if !a.Is6() {
		return a
	}
	b := a.As16()
	switch {
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case teredo.Contains(a):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	}
	return a
}
