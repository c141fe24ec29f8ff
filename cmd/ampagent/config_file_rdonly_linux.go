package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

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
func readOnlyMount(m mountProbe, at string) bool {
	kind, super, ok := m.mountOf(at)
	return ok && slices.Contains(localReadOnly, kind) && slices.Contains(strings.Split(super, ","), "ro")
}

// mountProbe is how the checks of a handler's program (programWriters)
// tell the host's mounts: the mount id statx gives for a path, the kind
// of file system statfs gives, and the mountinfo lines. hostMounts is
// the host's, made by the config's loader for each load (configLoader);
// a test gives its own, to stand in for a kernel without mount ids, for
// a FUSE daemon or for the lines of a mount (no package variable a test
// swaps, docs/SPEC-DECISIONS.md CLI-78, CLI-81).
type mountProbe struct {
	// mountID returns the mount id of at (not followed if a link); ok
	// is false where the kernel gives none.
	mountID func(at string) (id uint64, ok bool)
	// fsMagic returns the f_type statfs(2) gives for the file system at
	// (a folder or a file, not a link) lies on; ok is false when statfs
	// fails.
	fsMagic func(at string) (magic int64, ok bool)
	// mountInfo returns the mountinfo lines, at most maxMountInfo bytes
	// of them, the same for every lookup through the probe (onceLines);
	// ok is false when they cannot be read.
	mountInfo func() (lines []byte, ok bool)
}

// hostMounts is the host's mountProbe: statx's mount id, statfs's f_type
// and /proc/self/mountinfo, read once, at the first lookup that needs it,
// for all the lookups of the load that made the probe (CLI-90).
func hostMounts() mountProbe {
	return mountProbe{mountID: statxMountID, fsMagic: statfsMagic,
		mountInfo: onceLines(func() (io.ReadCloser, error) { return os.Open("/proc/self/mountinfo") })}
}

// onceLines returns a mountProbe's mountInfo that reads at most
// maxMountInfo bytes of what open gives at its first call and returns
// those same bytes at every call after. Each judged part of a handler's
// program may look its mount up (readOnlyMount, foreignFUSE), and a load
// judges up to maxJudgedFiles files for each handler: read per lookup,
// the lines (up to maxMountInfo each time, other users' FUSE mounts
// among them) cost each load as many reads as lookups (CLI-90). One
// snapshot also gives every lookup of a load the same mounts.
func onceLines(open func() (io.ReadCloser, error)) func() ([]byte, bool) {
	return sync.OnceValues(func() ([]byte, bool) {
		f, err := open()
		if err != nil {
			return nil, false
		}
		defer f.Close()
		lines, err := io.ReadAll(io.LimitReader(f, maxMountInfo))
		return lines, err == nil
	})
}

// statfsMagic returns the f_type statfs(2) gives for at (hostMounts).
func statfsMagic(at string) (int64, bool) {
	var sfs unix.Statfs_t
	if unix.Statfs(at, &sfs) != nil {
		return 0, false
	}
	return int64(sfs.Type), true // int32 or uint32 on some ports
}

// mountOf returns the kind and the super options of the file system at
// (not followed if a link) lies on: its line in /proc/self/mountinfo,
// found by the mount id statx gives; ok is false when either is not
// found (Linux before 5.8 gives no mount id).
func (m mountProbe) mountOf(at string) (kind, super string, ok bool) {
	id, ok := m.mountID(at)
	if !ok {
		return "", "", false
	}
	return m.readMountInfo(func(r io.Reader) (string, string, bool) { return mountLine(r, id) })
}

// statxMountID returns the mount id statx gives for at (not followed if
// a link); ok is false on Linux before 5.8, whose statx has no
// STATX_MNT_ID (hostMounts).
func statxMountID(at string) (uint64, bool) {
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, at, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_MNT_ID, &sx) != nil || sx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false
	}
	return sx.Mnt_id, true
}

// readMountInfo gives find m's mountinfo lines (m.mountInfo).
func (m mountProbe) readMountInfo(find func(io.Reader) (kind, super string, ok bool)) (kind, super string, ok bool) {
	lines, ok := m.mountInfo()
	if !ok {
		return "", "", false
	}
	return find(bytes.NewReader(lines))
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
// file system (statfs's f_type, m.fsMagic, a system call, before
// mountinfo is read), known false when it is on one whose line cannot be
// found. A test stands in for a FUSE daemon through m (CLI-81).
func (m mountProbe) fuseMountOf(at string) (super string, fuse, known bool) {
	magic, ok := m.fsMagic(at)
	switch {
	case !ok:
		return "", true, false // lstat saw it: fail closed
	case magic != fuseSuperMagic:
		return "", false, true
	}
	return m.fuseSuper(at)
}

// fuseSuper is fuseMountOf for at on a FUSE file system (statfs's
// f_type): the super options of its mount's line, known false when the
// line is not found; fuse false for virtiofs.
func (m mountProbe) fuseSuper(at string) (super string, fuse, known bool) {
	kind, super, ok := m.fuseMount(at)
	switch {
	case !ok:
		return "", true, false
	case kind != "fuse" && kind != "fuseblk" && !strings.HasPrefix(kind, "fuse."):
		return "", false, true // virtiofs: the host's share, judged as a network file system's
	}
	return super, true, true
}

// fuseMount returns the kind and the super options of the mount at (on
// a FUSE file system, statfs said) lies on: by the mount id statx gives
// (mountOf), or, on Linux before 5.8, which gives none, by its device:
// lstat's st_dev against each mountinfo line's MAJ:MIN (mountOfDevice).
func (m mountProbe) fuseMount(at string) (kind, super string, ok bool) {
	if id, ok := m.mountID(at); ok {
		return m.readMountInfo(func(r io.Reader) (string, string, bool) { return mountLine(r, id) })
	}
	var st unix.Stat_t
	if unix.Lstat(at, &st) != nil {
		return "", "", false
	}
	dev := strconv.FormatUint(uint64(unix.Major(st.Dev)), 10) + ":" + strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10)
	return m.readMountInfo(func(r io.Reader) (string, string, bool) { return mountOfDevice(r, dev) })
}

// mountOfDevice returns the kind and the super options mountinfo's lines
// of device dev ("MAJ:MIN", the third field) give. Each FUSE file system
// has a device of its own (an anonymous one; fuseblk's block device,
// which no other file system mounts at once): every line of dev is a
// mount of its one superblock (bind mounts included), whose kind and
// super options, user_id among them, are the same on each. ok is false
// when no line is of dev, a line of dev is cut short, lines of dev
// disagree on the kind or on user_id, or the lines cannot all be read:
// the mount is not told, and refused.
func mountOfDevice(mountinfo io.Reader, dev string) (kind, super string, ok bool) {
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		before, after, found := strings.Cut(sc.Text(), " - ")
		if f := strings.Fields(before); len(f) < 3 || f[2] != dev {
			continue
		}
		fields := strings.Fields(after)
		if !found || len(fields) < 3 {
			return "", "", false
		}
		if ok && (fields[0] != kind || superUserID(fields[2]) != superUserID(super)) {
			return "", "", false
		}
		kind, super, ok = fields[0], fields[2], true
	}
	if sc.Err() != nil {
		return "", "", false
	}
	return kind, super, ok
}

// superUserID returns the value of super's "user_id=" option (the first
// one, as foreignFUSE reads it), or "" when it has none.
func superUserID(super string) string {
	for _, opt := range strings.Split(super, ",") {
		if v, ok := strings.CutPrefix(opt, "user_id="); ok {
			return v
		}
	}
	return ""
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
func foreignFUSE(m mountProbe, at string) (string, bool) {
	super, fuse, known := m.fuseMountOf(at)
	if !fuse {
		return "", false
	}
	if !known {
		return "whose mounter cannot be told", true
	}
	uid, err := strconv.ParseUint(superUserID(super), 10, 32)
	switch {
	case err != nil:
		return "whose mounter cannot be told", true
	case uid == 0 || uid == uint64(os.Geteuid()):
		return "", false
	}
	return "that another user (uid " + strconv.FormatUint(uid, 10) + ") mounted", true
}
