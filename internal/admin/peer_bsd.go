//go:build darwin || freebsd

package admin

import "golang.org/x/sys/unix"

// peerUID is the uid of the process at the other end of a Unix socket
// (LOCAL_PEERCRED), or -1.
func peerUID(fd uintptr) int {
	cred, err := unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1
	}
	return int(cred.Uid)
}
