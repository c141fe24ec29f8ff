//go:build unix

package ampstcp

import (
	"net"
	"syscall"
)

// socketFailed reports whether c's socket holds a pending error (a reset
// received while bytes before it wait unread: a read would return those
// first), or is closed. It reads, and so clears, the error (SO_ERROR):
// the caller shuts the connection then.
func socketFailed(c net.Conn) bool {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = nc.NetConn() // a TLS connection's socket
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	soerr := 0
	if err := raw.Control(func(fd uintptr) {
		soerr, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
	}); err != nil {
		return true // closed
	}
	return soerr != 0
}
