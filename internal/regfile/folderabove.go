package regfile

import (
	"errors"
	"fmt"
	"io/fs"
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
// not say who may write (docs/SPEC-DECISIONS.md MIRROR-18, AGENT-48). The
// walk is Walk's, each folder the lookup passes through judged.
func FolderAbove(dir string) (real string, above *Above) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, &Above{Path: dir, Err: err}
	}
	if runtime.GOOS == "windows" {
		return abs, nil
	}
	real, err = Walk(abs, func(p Part) error {
		if p.Info.Mode()&os.ModeSymlink != 0 || !p.PassedThrough() {
			return nil // a link: its folder was judged before it
		}
		if above = judgeFolder(p.Path, p.Info); above != nil {
			return errAbove
		}
		return nil
	})
	var pe *fs.PathError
	switch {
	case err == nil:
		return real, nil
	case above != nil:
		return abs, above
	case errors.Is(err, ErrTooManyLinks) && errors.As(err, &pe):
		return abs, &Above{Path: pe.Path, Err: ErrTooManyLinks}
	case errors.As(err, &pe):
		return abs, &Above{Path: pe.Path, Err: err}
	}
	return abs, &Above{Path: abs, Err: err}
}

// errAbove stops FolderAbove's walk at the folder it judged.
var errAbove = errors.New("a folder above")

// Part is one name the system's lookup of a path passes through, as Walk
// gives it to its judge.
type Part struct {
	// Path is the part, absolute: the root first, then each name looked
	// up in the folder before it (a symbolic link's own name too, before
	// what it points to).
	Path string
	// Info is Path's lstat: a link is given as a link.
	Info os.FileInfo
	// Next is the name the lookup takes next after Path ("" where the
	// path ends there, ".." where it goes back up; for a link, the name
	// after the link's own).
	Next string
}

// PassedThrough reports whether the lookup goes on from the part to a
// name in it: a folder on the way, not the path's end.
func (p Part) PassedThrough() bool { return p.Next != "" && p.Next != ".." }

// Walk resolves abs (an absolute path) once, as the system does:
// component by component from the root, every symbolic link followed, at
// most MaxFolderLinks in all. It gives judge each part it looks up, the
// root first, in the order of the lookup and before it goes on from it,
// and returns the path abs resolves to; or judge's first error as it
// is; or an *fs.PathError naming the part whose lstat or readlink failed,
// whose Err is ErrTooManyLinks where more than MaxFolderLinks links lead
// on. It is the one walk of FolderAbove and of the agent's judge of a
// handler's program (cmd/ampagent/config_file_unix.go): each judges the
// parts by its own rule (docs/SPEC-DECISIONS.md CLI-77).
func Walk(abs string, judge func(Part) error) (string, error) {
	sep := string(filepath.Separator)
	todo := strings.Split(abs, sep)
	cur, links := sep, 0
	fi, err := os.Lstat(cur)
	if err != nil {
		return cur, err
	}
	if err := judge(Part{Path: cur, Info: fi, Next: nextName(todo)}); err != nil {
		return cur, err
	}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..": // cur holds no link: its parent is the system's
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return cur, err
		}
		if err := judge(Part{Path: next, Info: fi, Next: nextName(todo)}); err != nil {
			return cur, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > MaxFolderLinks {
			return cur, &fs.PathError{Op: "readlink", Path: next, Err: ErrTooManyLinks}
		}
		to, err := os.Readlink(next)
		if err != nil {
			return cur, err
		}
		if filepath.IsAbs(to) {
			cur = sep
		}
		todo = append(strings.Split(to, sep), todo...)
	}
	return cur, nil
}

// nextName is the first name of todo the lookup takes: "" and "." are
// none.
func nextName(todo []string) string {
	for _, name := range todo {
		if name != "" && name != "." {
			return name
		}
	}
	return ""
}

// judgeFolder is FolderAbove's rule for one folder on the way (path, its
// lstat fi).
func judgeFolder(path string, fi os.FileInfo) *Above {
	if !fi.IsDir() {
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
