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
	uid := -1
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { uid = peerUID(fd) })
		}
	}
	return context.WithValue(ctx, peerUIDKey{}, uid)
}
