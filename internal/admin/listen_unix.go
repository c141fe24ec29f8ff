//go:build unix

package admin

import (
	"net"
	"os"
	"syscall"

	"github.com/ampbundle/ampbundle/amp"
)

// listenPrivate creates the socket with a umask that leaves it to its
// owner from the first moment (the caller then checks the mode).
func listenPrivate(path string) (net.Listener, error) {
	old := syscall.Umask(0o177)
	defer syscall.Umask(old)
	return net.Listen("unix", path)
}

// checkPrivate examines what is at path once the socket was created
// there, following no link: it must be a socket of this process's
// effective user that no one else may use. Anything else (the socket
// moved away and a link, a file or another user's socket put in its
// place by whoever may write the folder) refuses the start; nothing is
// changed through the path (docs/SPEC-DECISIONS.md ADMIN-7).
func checkPrivate(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return amp.Named(0, "admin_socket", "cannot check the admin socket just created").WithCause(err)
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if st.Mode()&os.ModeSocket == 0 || !ok || int64(s.Uid) != int64(os.Geteuid()) || st.Mode().Perm()&0o077 != 0 {
		return amp.Named(0, "admin_socket", "the admin socket just created is no longer at its path as created (mode %v): another user may write its folder", st.Mode())
	}
	return nil
}
