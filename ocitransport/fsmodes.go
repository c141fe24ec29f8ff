package ocitransport

import (
	"io/fs"
	"os"
	"path"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// tarBuildMarker is the file a tar destination's writer puts in its build
// folder (.NAME.layout-DIGITS, openTarDestination) as soon as it holds
// it: the writer's own mark, which no other program makes and which no
// layout or tar carries (writeTar writes only a layout's names). Where a
// file system keeps no modes, removeStaleTarTemp takes a folder for a
// killed writer's only when it holds this file, owned by this user
// (docs/SPEC-DECISIONS.md OCI-37).
const tarBuildMarker = ".ampbundle-tar-build"

// The statfs f_type values (Linux, linux/magic.h and each file system's
// source) of the file systems whose modes mean nothing: every file shows
// the mask its mount was given, whatever it was made with.
const (
	msdosMagic = 0x4d44     // msdos, vfat (FAT12/16/32)
	exfatMagic = 0x2011bab0 // exfat
	ntfsMagic  = 0x5346544e // ntfs (the old driver)
	ntfs3Magic = 0x7366746e // ntfs3
	fuseMagic  = 0x65735546 // fuse and fuseblk alike (ntfs-3g, exfat-fuse)
	cifsMagic  = 0xff534d42 // cifs
	smb2Magic  = 0xfe534d42 // smb3 (cifs.ko's smb2 and later)
	smbMagic   = 0x517b     // smbfs
	vboxMagic  = 0x786f4256 // vboxsf (a VirtualBox shared folder)
)

// modelessFSType says whether the file system statfs names by fsType
// keeps no modes of its own (FAT, exFAT, NTFS, SMB, FUSE: the USB stick
// or the share that crosses the air gap). FUSE is counted whole: statfs
// tells fuseblk from any other FUSE file system by no f_type, and one
// that does keep modes (sshfs, ntfs-3g with "permissions") is then
// judged by ownership and tarBuildMarker, as the others.
func modelessFSType(fsType int64) bool {
	switch uint32(fsType) {
	case msdosMagic, exfatMagic, ntfsMagic, ntfs3Magic, fuseMagic, cifsMagic, smb2Magic, smbMagic, vboxMagic:
		return true
	}
	return false
}

// What the file system of an open folder is known to do with modes
// (fsModesOf).
const (
	// modesUnknown: statfs cannot tell (it fails, or the system gives
	// no f_type: every system but Linux here). The stale cleaner then
	// judges the mode and leaves a folder that fails it (fail closed);
	// a new build folder's mode is not judged (holdNewFolder, as before
	// OCI-37), since Windows shows 0777 for every folder and macOS its
	// mount's mask on a USB stick, and refusing there would refuse
	// every tar written.
	modesUnknown = iota
	// modesKept: statfs names a file system not modelessFSType.
	modesKept
	// modesMeanNothing: statfs names a modelessFSType.
	modesMeanNothing
)

// fsTypeOf reads the statfs f_type of the file system of an open file:
// statfsType, or a test's stand-in for a file system it cannot mount
// (Options.statfs; docs/SPEC-DECISIONS.md STYLE-2).
type fsTypeOf func(d *os.File) (int64, error)

// fsModesOf is what the file system of the folder open as d is known
// to do with modes (modesUnknown, modesKept, modesMeanNothing), its
// f_type read by statfs: the one reading that the stale cleaner
// (isWritersFolder) and the check of a new build folder
// (checkNewFolder) both take.
func fsModesOf(d *os.File, statfs fsTypeOf) int {
	t, err := statfs(d)
	switch {
	case err != nil:
		return modesUnknown
	case modelessFSType(t):
		return modesMeanNothing
	}
	return modesKept
}

// isWritersFolder is the one rule by which a tar's build folder is told
// from another folder of this user's (docs/SPEC-DECISIONS.md OCI-37),
// d being the folder name below root, open, and st its lstat. Where the
// file system keeps modes, the mode: as os.MkdirTemp makes it, no access
// for group or others (another user who renames a folder of ours to the
// writer's name cannot make it so). Where it keeps none (every folder
// shows its mount's mask, 0755, 0777 or 0700 alike), the writer's own
// mark: tarBuildMarker, of this user. statfs reads the file system's
// f_type (fsModesOf).
func isWritersFolder(root *os.Root, name string, d *os.File, st fs.FileInfo, statfs fsTypeOf) bool {
	if fsModesOf(d, statfs) == modesMeanNothing {
		return hasWritersMark(root, name)
	}
	return st.Mode().Perm()&0o077 == 0
}

// hasWritersMark says whether the folder name below root holds
// tarBuildMarker as the writer made it: a regular file (lstat, never a
// link), of this user.
func hasWritersMark(root *os.Root, name string) bool {
	st, err := root.Lstat(path.Join(name, tarBuildMarker))
	return err == nil && st.Mode().IsRegular() && regfile.OwnedBySelf(st)
}
