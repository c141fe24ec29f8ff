//go:build !unix

package ampstcp

import "net"

// socketFailed reports whether c's socket holds a pending error; where
// the platform's socket is not asked, never (a reset is then seen by the
// watcher's read only: serverConn.watch).
func socketFailed(c net.Conn) bool { return false }
