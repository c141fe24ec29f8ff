package admin

import (
	"context"
	"net"
)

// ConnContext records the peer's uid of a Unix socket connection, for
// peerCheck; use it as http.Server.ConnContext. Where the system cannot
// tell (or the connection is not a Unix socket), the uid is unknown and
// every request is refused: the socket fails closed.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerUIDKey{}, connUID(c))
}

// connUID is the uid of the process at the other end of the Unix socket
// connection c (for a client, the server's: the credentials it had when
// it listened), or -1 where the system cannot tell or c is not a Unix
// socket.
func connUID(c net.Conn) int {
	uid := -1
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { uid = peerUID(fd) })
		}
	}
	return uid
}
