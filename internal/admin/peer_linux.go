package admin

import "syscall"

// peerUID is the uid of the process at the other end of a Unix socket
// (SO_PEERCRED), or -1.
func peerUID(fd uintptr) int {
	cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return -1
	}
	return int(cred.Uid)
}
