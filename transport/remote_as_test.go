package transport

import "net"

// The loopback addresses a test dials from (net.Dialer.LocalAddr) and
// the remote addresses listenRemoteAs presents for them.
var (
	// siteFrom are four loopback addresses presented as four /64s of one
	// /48, 2001:db8:69::/48 (2001:db8:69:1::1 to 2001:db8:69:4::1).
	siteFrom = []string{"127.0.0.91", "127.0.0.92", "127.0.0.93", "127.0.0.94"}
	// callerFrom is a loopback address presented as callerAddr, another
	// caller's.
	callerFrom = "127.0.0.95"
)

// callerAddr is the address connections from callerFrom come from.
const callerAddr = "198.51.100.95"

// remoteAsListener accepts TCP connections on the loopback interface and
// presents those from the loopback addresses in as with the remote
// address as gives them (the /64s of one IPv6 site, another caller), the
// socket itself unchanged, for tests of per-peer shares (ampstcp's tests
// have the same helper: test files are not shared across packages).
type remoteAsListener struct {
	net.Listener
	as map[string]string // a loopback IP -> the IP its connections come from
}

// listenRemoteAs listens on 127.0.0.1, presenting the connections from
// siteFrom and callerFrom as coming from the site's /64s and callerAddr.
func listenRemoteAs() (*remoteAsListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &remoteAsListener{Listener: ln, as: map[string]string{
		siteFrom[0]: "2001:db8:69:1::1",
		siteFrom[1]: "2001:db8:69:2::1",
		siteFrom[2]: "2001:db8:69:3::1",
		siteFrom[3]: "2001:db8:69:4::1",
		callerFrom:  callerAddr,
	}}, nil
}

// Accept accepts a connection, presented with its address of as.
func (l *remoteAsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	ra := tc.RemoteAddr().(*net.TCPAddr)
	if ip, ok := l.as[ra.IP.String()]; ok {
		return &remoteAsConn{TCPConn: tc, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: ra.Port}}, nil
	}
	return c, nil
}

// remoteAsConn is a TCP connection presented with another remote
// address; its other methods (CloseWrite, SyscallConn) are the socket's.
type remoteAsConn struct {
	*net.TCPConn
	remote net.Addr
}

// RemoteAddr is the address the connection is presented with.
func (c *remoteAsConn) RemoteAddr() net.Addr { return c.remote }
