package admin

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// peerUID is the uid of the process at the other end of a Unix socket
// (SO_PEERCRED), or -1. A uid this process's user namespace does not map
// reads as the overflow uid: outside the initial namespace that uid names
// no one (every unmapped user, the host's root included, reads as it), so
// it is unknown (-1), never taken for this process's own uid
// (docs/SPEC-DECISIONS.md ADMIN-1).
func peerUID(fd uintptr) int {
	cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return -1
	}
	uid := int(cred.Uid)
	if ns := userNS(); uid == ns.overflow && !ns.initial {
		return -1
	}
	return uid
}

// userNSInfo is what peerUID needs of this process's user namespace.
type userNSInfo struct {
	initial  bool // the initial namespace: every uid is mapped
	overflow int  // the uid an unmapped one reads as
}

// userNS reads this process's user namespace once: whether it is the
// initial one (its uid_map maps every uid to itself; unreadable: not
// taken for it) and the overflow uid (65534 where unreadable, the
// kernel's default).
var userNS = sync.OnceValue(func() userNSInfo {
	ns := userNSInfo{overflow: 65534}
	if b, err := os.ReadFile("/proc/sys/kernel/overflowuid"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			ns.overflow = n
		}
	}
	if b, err := os.ReadFile("/proc/self/uid_map"); err == nil {
		ns.initial = slices.Equal(strings.Fields(string(b)), []string{"0", "0", "4294967295"})
	}
	return ns
})
