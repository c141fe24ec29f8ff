package regfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// MaxFolderLinks bounds the links FolderAbove follows, as the system
// bounds those of one path (40 on Linux).
const MaxFolderLinks = 40

// ErrTooManyLinks is the Err of an Above where more than MaxFolderLinks
// links lead on.
var ErrTooManyLinks = errors.New("too many links on the way")

// Above is the first folder FolderAbove found through which another user
// may replace or redirect what lies below it, and why: exactly one of
// Foreign, Writable and Err says so.
type Above struct {
	// Path is the folder, or the name that could not be examined.
	Path string
	// Foreign: the folder is owned by UID, another user than this
	// process's effective user and root (ForeignOwner).
	Foreign bool
	UID     uint32
	// Writable: group or others may write the folder (Mode, its
	// permission bits) and it is not sticky.
	Writable bool
	Mode     os.FileMode
	// Err: the name could not be examined, is not a folder, or more
	// than MaxFolderLinks links lead on (ErrTooManyLinks).
	Err error
}

// FolderAbove resolves dir once, as the system does (made absolute,
// component by component, every link followed), and returns real, the
// path it resolves to, or, where a folder on the way lets another user
// replace or redirect dir, the absolute dir and that folder (above): one
// owned by another user than this process's and root, or writable by
// group or others without the sticky bit (which keeps others from
// renaming what they do not own, as /tmp's). Every folder above dir up to
// the root is judged, along the path as given and the one it resolves to,
// as ssh's StrictModes walks a home, and so is every folder a link on the
// way lies in and the folders above its target: a link kept in a folder
// others may write is theirs to repoint. A name that cannot be examined
// is such a folder too (Err). dir itself is not judged: its callers judge
// it by their own rule. Nothing is judged on Windows, whose mode bits do
// not say who may write (docs/SPEC-DECISIONS.md MIRROR-18, AGENT-48).
func FolderAbove(dir string) (real string, above *Above) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, &Above{Path: dir, Err: err}
	}
	if runtime.GOOS == "windows" {
		return abs, nil
	}
	sep := string(filepath.Separator)
	cur, rest, links := sep, strings.Split(abs, sep), 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..": // cur holds no link: its parent is the system's
			cur = filepath.Dir(cur)
			continue
		}
		if a := judgeFolder(cur); a != nil {
			return abs, a
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return abs, &Above{Path: next, Err: err}
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		to, err := os.Readlink(next)
		if links++; links > MaxFolderLinks {
			err = ErrTooManyLinks
		}
		if err != nil {
			return abs, &Above{Path: next, Err: err}
		}
		if filepath.IsAbs(to) {
			cur = sep
		}
		rest = append(strings.Split(to, sep), rest...)
	}
	return cur, nil
}

// judgeFolder is FolderAbove's rule for one folder on the way.
func judgeFolder(path string) *Above {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return &Above{Path: path, Err: err}
	case !fi.IsDir():
		return &Above{Path: path, Err: fmt.Errorf("%s is not a folder", path)}
	}
	if uid, foreign := ForeignOwner(fi); foreign {
		return &Above{Path: path, Foreign: true, UID: uid}
	}
	if OthersMayRename(fi) {
		return &Above{Path: path, Writable: true, Mode: fi.Mode().Perm()}
	}
	return nil
}

// OthersMayRename reports whether a folder's mode (fi, an lstat or stat
// of it) lets group or others rename what it holds: write without the
// sticky bit. The rule of FolderAbove for each folder on the way, and of
// the folder a caller keeps its own files in (agent/ledger).
func OthersMayRename(fi os.FileInfo) bool {
	return fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0
}
