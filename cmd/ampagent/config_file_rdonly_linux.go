package main

import (
	"bufio"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// readOnlyMount reports whether at lies on a file system whose superblock
// is read-only (the "ro" of its super options in /proc/self/mountinfo,
// found by the mount id statx gives) and which is one of localReadOnly's
// kinds: there no one writes, through any mount, but root by remounting
// it or writing its device (docs/SPEC-DECISIONS.md CLI-70 amended). A
// read-only mount of a writable file system (a bind mount, Kubernetes'
// ConfigMap and Secret volumes: tmpfs mounted read-write, bound read-only)
// is not: others write it through another path. A network or FUSE file
// system is not either, whatever it says: others write it on the server.
func readOnlyMount(at string) bool {
	kind, super, ok := mountOf(at)
	return ok && slices.Contains(localReadOnly, kind) && slices.Contains(strings.Split(super, ","), "ro")
}

// mountOf returns the kind and the super options of the file system at
// (not followed if a link) lies on: its line in /proc/self/mountinfo,
// found by the mount id statx gives; ok is false when either is not
// found.
func mountOf(at string) (kind, super string, ok bool) {
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, at, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_MNT_ID, &sx) != nil || sx.Mask&unix.STATX_MNT_ID == 0 {
		return "", "", false
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	return mountLine(io.LimitReader(f, maxMountInfo), sx.Mnt_id)
}

// maxMountInfo bounds the bytes of /proc/self/mountinfo read (a host with
// thousands of mounts has a few hundred KiB); a mount not found within
// them is not read-only, and a FUSE mount not found is refused.
const maxMountInfo = 8 << 20

// localReadOnly are the kinds of file system a read-only superblock makes
// read-only for everyone but root: local, with no server and no daemon.
var localReadOnly = []string{"squashfs", "erofs", "iso9660", "cramfs", "udf",
	"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "vfat", "exfat", "tmpfs", "ramfs"}

// mountLine returns the kind and the super options mountinfo's line of
// mount id gives. A line is "ID PARENT MAJ:MIN ROOT POINT OPTIONS
// [OPTIONAL…] - TYPE SOURCE SUPER" (proc(5)); paths escape their spaces,
// so " - " is the separator alone.
func mountLine(mountinfo io.Reader, id uint64) (kind, super string, ok bool) {
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	prefix := strconv.FormatUint(id, 10) + " "
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		_, after, found := strings.Cut(line, " - ")
		fields := strings.Fields(after)
		if !found || len(fields) < 3 {
			return "", "", false
		}
		return fields[0], fields[2], true
	}
	return "", "", false
}

// fuseSuperMagic is the f_type statfs(2) gives for a FUSE file system
// (FUSE_SUPER_MAGIC, linux/magic.h), fuseblk's included.
const fuseSuperMagic = 0x65735546

// fuseMountOf returns the super options of the FUSE mount at (a folder
// or a file, not a link) lies on: fuse is false when at is on no FUSE
// file system (statfs's f_type, a system call, before mountinfo is
// read), known false when it is on one whose line cannot be found. A
// variable so that a test stands in for a FUSE daemon.
var fuseMountOf = func(at string) (super string, fuse, known bool) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(at, &sfs); err != nil {
		return "", true, false // lstat saw it: fail closed
	}
	if sfs.Type != fuseSuperMagic {
		return "", false, true
	}
	kind, super, ok := mountOf(at)
	switch {
	case !ok:
		return "", true, false
	case kind != "fuse" && kind != "fuseblk" && !strings.HasPrefix(kind, "fuse."):
		return "", false, true // virtiofs: the host's share, judged as a network file system's
	}
	return super, true, true
}

// foreignFUSE reports whether at lies on a FUSE file system that another
// user than the agent's or root mounted (the "user_id" fusermount puts in
// its super options; fuse(8)), and says who: that user's daemon answers
// every stat with any owner and mode it likes (root's, 0755) and every
// read with any bytes, now and at each call, so neither rule of
// judgeProgramPart means anything there. With user_allow_other in
// /etc/fuse.conf, any user may mount such a file system over a folder
// they own, in a sticky folder (/tmp) among others (CLI-73). A FUSE mount
// whose mounter is not told is refused too.
func foreignFUSE(at string) (string, bool) {
	super, fuse, known := fuseMountOf(at)
	if !fuse {
		return "", false
	}
	if !known {
		return "whose mounter cannot be told", true
	}
	for _, opt := range strings.Split(super, ",") {
		v, ok := strings.CutPrefix(opt, "user_id=")
		if !ok {
			continue
		}
		uid, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			break
		}
		if uid == 0 || uid == uint64(os.Geteuid()) {
			return "", false
		}
		return "that another user (uid " + strconv.FormatUint(uid, 10) + ") mounted", true
	}
	return "whose mounter cannot be told", true
}
