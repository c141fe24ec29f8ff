//go:build unix

package admin

import (
	"net"
	"syscall"
)

// listenPrivate creates the socket with a umask that leaves it to its
// owner from the first moment (the caller then checks the mode).
func listenPrivate(path string) (net.Listener, error) {
	old := syscall.Umask(0o177)
	defer syscall.Umask(old)
	return net.Listen("unix", path)
}
