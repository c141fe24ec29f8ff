//go:build linux

package regfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxOutputHops bounds the links descriptorOf follows, as the kernel's
// own bound on a name's links (40, path_resolution(7)).
const maxOutputHops = 40

// procFDFolder is a descriptor folder of the proc file system: that of a
// process, /proc/PID/fd, or of one of its threads,
// /proc/PID/task/TID/fd (/proc/self and /proc/thread-self resolved).
var procFDFolder = regexp.MustCompile(`^/proc/([0-9]+)(/task/[0-9]+)?/fd$`)

// descriptorOf reports whether the name path, or a link its chain of
// links passes through, is a "magic link" of the proc file system
// (proc(5), /proc/PID/fd/N): /dev/stdout, /dev/stderr, /dev/fd/N and
// /proc/self/fd/N are such names. Each hop is examined with Lstat, at
// most maxOutputHops; pid and fd are the process and descriptor the
// magic link stands for.
func descriptorOf(path string) (pid, fd int, ok bool) {
	p := path
	for range maxOutputHops {
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return 0, 0, false
		}
		if pid, fd, ok := magicLink(p); ok {
			return pid, fd, true
		}
		t, err := os.Readlink(p)
		if err != nil {
			return 0, 0, false
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return 0, 0, false
}

// magicLink reports whether the link p is an entry of a descriptor
// folder of the proc file system (procFDFolder, and procfs by statfs).
func magicLink(p string) (pid, fd int, ok bool) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return 0, 0, false
	}
	m := procFDFolder.FindStringSubmatch(dir)
	if m == nil {
		return 0, 0, false
	}
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(m[1])
	fd, err2 := strconv.Atoi(filepath.Base(p))
	if err1 != nil || err2 != nil || fd < 0 {
		return 0, 0, false
	}
	return pid, fd, true
}

// ownDescriptor returns a duplicate of this process's descriptor fd,
// which the name path stands for (descriptorOf): writes through it go
// where the descriptor's own offset and flags send them, as `-o -`
// writes stdout (a `>` redirection truncated the file, `>>` appends),
// and the offset the descriptor shares with the shell moves past them.
// Whatever the descriptor is (a pipe, a socket, a file, a terminal), it
// is written through the duplicate; the name is never opened.
func ownDescriptor(path string, fd int) (*os.File, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(nfd), path), nil
}
