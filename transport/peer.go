package transport

import "net/netip"

// Peer names the party a transport charges for what it holds on a
// connection's behalf (in-flight bytes): the IP address of remote (an
// address "host:port", as net.Conn.RemoteAddr().String() and
// http.Request.RemoteAddr give it), or for IPv6 its /64 network, since a
// host on such a network can use any of its addresses. Anything else (a
// pipe, a Unix socket) is one peer, named as given. The byte budgets count
// by this peer; the agent's processing slots and its streams count an
// IPv6 peer by its /48 (admission.Network: one site has 65,536 /64s to
// send from), its /64s taking turns within it (docs/TRANSPORT.md §4).
func Peer(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}
