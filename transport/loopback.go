package transport

import (
	"net"
	"net/netip"
	"syscall"
)

// NotLoopbackError is the error of LoopbackOnly: the address a plain
// (unencrypted) connection was about to reach is not a loopback address.
type NotLoopbackError struct {
	// Addr is the address dialed, as the dialer gave it ("10.0.0.5:80").
	Addr string
}

func (e *NotLoopbackError) Error() string {
	return "plain connection to " + e.Addr + ", not a loopback address"
}

// LoopbackOnly is a net.Dialer Control function that lets a connection
// reach a loopback address only (127.0.0.0/8, ::1, IPv4-mapped loopback):
// it runs once the host name is resolved, on the address actually dialed,
// so that a name that looks local ("localhost", a hosts file entry, a
// resolver's answer) but resolves elsewhere is refused before any byte is
// sent (docs/SPEC-DECISIONS.md CLI-25).
func LoopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return nil
	}
	return &NotLoopbackError{Addr: address}
}
