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
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, at, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_MNT_ID, &sx) != nil || sx.Mask&unix.STATX_MNT_ID == 0 {
		return false
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	return superReadOnly(io.LimitReader(f, maxMountInfo), sx.Mnt_id)
}

// maxMountInfo bounds the bytes of /proc/self/mountinfo read (a host with
// thousands of mounts has a few hundred KiB); a mount not found within
// them is not read-only.
const maxMountInfo = 8 << 20

// localReadOnly are the kinds of file system a read-only superblock makes
// read-only for everyone but root: local, with no server and no daemon.
var localReadOnly = []string{"squashfs", "erofs", "iso9660", "cramfs", "udf",
	"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "vfat", "exfat", "tmpfs", "ramfs"}

// superReadOnly reports whether mountinfo's line of mount id says a
// file system of localReadOnly's kinds whose super options hold "ro".
// A line is "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL…] - TYPE
// SOURCE SUPER" (proc(5)); paths escape their spaces, so " - " is the
// separator alone.
func superReadOnly(mountinfo io.Reader, id uint64) bool {
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	prefix := strconv.FormatUint(id, 10) + " "
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		_, after, ok := strings.Cut(line, " - ")
		fields := strings.Fields(after)
		return ok && len(fields) >= 3 && slices.Contains(localReadOnly, fields[0]) &&
			slices.Contains(strings.Split(fields[2], ","), "ro")
	}
	return false
}
