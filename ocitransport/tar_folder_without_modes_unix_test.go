//go:build unix

package ocitransport

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// onFileSystem is a statfs that reports fsType for every file (the
// file system the test cannot mount here; unknownFS: statfs fails, as on
// every system but Linux).
func onFileSystem(fsType int64) fsTypeOf {
	return func(*os.File) (int64, error) {
		if fsType == unknownFS {
			return 0, errors.New("no f_type")
		}
		return fsType, nil
	}
}

const (
	ext4Magic = 0xef53
	unknownFS = -1
)

// TestOnlyFileSystemsWithoutModesSkipTheModeRule: the decision, on
// injected statfs f_type values: FAT, exFAT, NTFS (both drivers), FUSE,
// SMB and VirtualBox shared folders keep no modes; ext4, xfs, btrfs,
// tmpfs, NFS and an unknown value do (fail closed: the mode is judged).
func TestOnlyFileSystemsWithoutModesSkipTheModeRule(t *testing.T) {
	for _, c := range []struct {
		name     string
		fsType   int64
		modeless bool
	}{
		{"vfat", 0x4d44, true}, {"exfat", 0x2011bab0, true}, {"ntfs", 0x5346544e, true},
		{"ntfs3", 0x7366746e, true}, {"fuseblk", 0x65735546, true}, {"cifs", 0xff534d42, true},
		{"smb2", 0xfe534d42, true}, {"smbfs", 0x517b, true}, {"vboxsf", 0x786f4256, true},
		{"ext4", ext4Magic, false}, {"xfs", 0x58465342, false}, {"btrfs", 0x9123683e, false},
		{"tmpfs", 0x01021994, false}, {"nfs", 0x6969, false}, {"unknown", 0x12345678, false},
		{"vfat, sign-extended", int64(int32(0x4d44)), true}, {"cifs, sign-extended", int64(int32(-0x00acb2be)), true},
	} {
		if got := modelessFSType(c.fsType); got != c.modeless {
			t.Errorf("%s (%#x): modeless %v, want %v", c.name, c.fsType, got, c.modeless)
		}
	}
}

// TestKilledTarWritersFolderOnAVolumeWithoutModesIsJudgedByItsMark: on a
// volume that keeps no modes (a FAT or exFAT USB stick, an SMB share:
// every folder shows its mount's mask), OCI-25's cleaner required mode
// 0700, so a killed writer's build folder (0755 there) was never removed,
// up to a layout's size left on the stick each time; and on a stick
// mounted umask=077 (every folder 0700) any folder of ours renamed to
// the writer's name was removed. There the folder must hold the writer's
// mark (tarBuildMarker, a regular file of this user's) instead; where
// the file system keeps modes, the mode is judged as before and the mark
// buys nothing (docs/SPEC-DECISIONS.md OCI-37).
func TestKilledTarWritersFolderOnAVolumeWithoutModesIsJudgedByItsMark(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	stale := now.Add(-2 * StaleLayoutTempAge)
	for _, c := range []struct {
		name   string
		fsType int64
		mode   os.FileMode
		mark   string // "file", "link", "dir" or "" (none)
		remove bool
	}{
		{"a killed writer's folder on a stick (0755, marked)", msdosMagic, 0o755, "file", true},
		{"a killed writer's folder on a share (0777, marked)", cifsMagic, 0o777, "file", true},
		{"a folder of ours renamed, on a stick (0755, no mark)", msdosMagic, 0o755, "", false},
		{"a folder of ours renamed, on a stick mounted umask=077 (0700, no mark)", exfatMagic, 0o700, "", false},
		{"the mark a link", msdosMagic, 0o755, "link", false},
		{"the mark a folder", msdosMagic, 0o755, "dir", false},
		{"modes kept: marked but others may read it", ext4Magic, 0o755, "file", false},
		{"modes kept: 0700, as before", ext4Magic, 0o700, "", true},
		{"statfs cannot tell: marked, 0755, the mode judged", unknownFS, 0o755, "file", false},
		{"statfs cannot tell: 0700, as before", unknownFS, 0o700, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, ".site.tar.layout-123")
			for _, d := range []string{p, filepath.Join(p, "blobs", "sha256")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{"oci-layout", "index.json", "blobs/sha256/.ingest-1"} {
				if err := os.WriteFile(filepath.Join(p, f), []byte("partial"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m := filepath.Join(p, tarBuildMarker)
			var err error
			switch c.mark {
			case "file":
				err = os.WriteFile(m, nil, 0o600)
			case "link":
				err = os.Symlink(filepath.Join(p, "oci-layout"), m)
			case "dir":
				err = os.Mkdir(m, 0o755)
			}
			if err == nil {
				err = os.Chmod(p, c.mode)
			}
			if err != nil {
				t.Fatal(err)
			}
			setTreeTimes(t, p, stale)
			removeStaleTarTemps(dir, "site.tar", now, onFileSystem(c.fsType))
			_, err = os.Lstat(p)
			if gone := os.IsNotExist(err); gone != c.remove {
				t.Errorf("removed %v, want %v", gone, c.remove)
			}
		})
	}
}

// setTreeTimes sets the times of p and everything in it (links left as
// they are) to at.
func setTreeTimes(t *testing.T, p string, at time.Time) {
	t.Helper()
	err := filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(q, at, at)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTarWritersFolderIsMarked: the writer puts its mark in its build
// folder at the open (a new, empty regular file), and the tar it writes
// carries none of it.
func TestTarWritersFolderIsMarked(t *testing.T) {
	dir := t.TempDir()
	tar := filepath.Join(dir, "site.tar")
	e, err := Open(context.Background(), Location{Kind: KindLayoutTar, Path: tar}, Options{}, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, err := os.Lstat(filepath.Join(e.tmp, tarBuildMarker))
	if err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		t.Fatalf("the build folder's mark: %v (%v)", st, err)
	}
	if err := e.Commit(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(tar)
	if err != nil {
		t.Fatal(err)
	}
	if contains(raw, tarBuildMarker) {
		t.Error("the tar carries the writer's mark")
	}
}

func contains(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

// TestTarBuildFolderOthersMayUseIsRefusedWhereModesAreKept: OCI-32
// amended's known cost. An empty folder of the writer's that group or
// others may write, swapped in at the build folder's name as it was
// made, passed the checks (its mode was judged nowhere), and whoever may
// write it changed the layout while it was built. Where the file system
// keeps modes the folder must be 0700, as os.MkdirTemp makes it, or the
// open is refused, io_error, and the folder is untouched; on a volume
// that keeps none, or where statfs cannot tell, the same folder (its
// mask) is taken, as a stick's must be (docs/SPEC-DECISIONS.md OCI-37).
func TestTarBuildFolderOthersMayUseIsRefusedWhereModesAreKept(t *testing.T) {
	for _, c := range []struct {
		name   string
		fsType int64
		mode   os.FileMode
		refuse bool
	}{
		{"modes kept, 0777", ext4Magic, 0o777, true},
		{"modes kept, 0750", ext4Magic, 0o750, true},
		{"no modes (vfat), 0755", msdosMagic, 0o755, false},
		{"statfs cannot tell (Windows, macOS), 0777: as before", unknownFS, 0o777, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			theirs := filepath.Join(dir, "shared")
			if err := os.Mkdir(theirs, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(theirs, c.mode); err != nil {
				t.Fatal(err)
			}
			swapped := false
			o := Options{statfs: onFileSystem(c.fsType), trace: func(step string) {
				if step != "made:tar-temp" || swapped {
					return
				}
				temps, err := filepath.Glob(filepath.Join(dir, ".site.tar.layout-*"))
				if err != nil || len(temps) != 1 {
					t.Errorf("the tar's folder holds %q, want one build folder (%v)", temps, err)
					return
				}
				if err := os.Rename(temps[0], filepath.Join(dir, "moved")); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(theirs, temps[0]); err != nil {
					t.Error(err)
					return
				}
				theirs, swapped = temps[0], true
			}}
			e, err := Open(context.Background(), Location{Kind: KindLayoutTar, Path: filepath.Join(dir, "site.tar")}, o, ReadWrite)
			if !swapped {
				t.Fatal("the test never swapped the build folder")
			}
			if !c.refuse {
				if err != nil {
					t.Fatalf("on a volume without modes, the open was refused: %v", err)
				}
				e.Close()
				return
			}
			if err == nil {
				e.Close()
				t.Fatal("a build folder others may use was taken")
			}
			if name := amp.NameOf(err); name != ErrIO {
				t.Errorf("refused %s (%v), want %s", name, err, ErrIO)
			}
			if left, err := os.ReadDir(theirs); err != nil || len(left) != 0 {
				t.Errorf("the folder put at the name holds %d entries (%v), want it untouched", len(left), err)
			}
		})
	}
}
