//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// configWriters refuses a config file (st: the open file's fstat) that
// another user than this process's effective one or root owns, or that
// group or others may write (regfile.OthersMayWrite, the one rule of a CA
// file too, CLI-91): that user could have the agent run a program of
// theirs as the agent's user, or widen its allow rules, as OpenSSH
// refuses such a config file ("Bad owner or permissions", readconf.c).
// Reading it stays open to anyone the operator lets.
func configWriters(st fs.FileInfo) error {
	if w := regfile.OthersMayWrite(st); w != nil {
		// Numbers the system gave, not text another user chose.
		return cliutil.WithHint(cliutil.Failf("invalid_config", "%s", w.Reason("the config file", "the agent's")),
			"make the config file the agent's user's (chown) and writable by it alone (chmod go-w)")
	}
	return nil
}

// pathWriters refuses a file the agent has the system run for a
// handler (path: absolute; the program as lookProgram found it, or an
// interpreter its #! line names, programWriters) that another user than
// this process's effective one or root could rewrite or replace, as the
// config file naming it is refused (configWriters, CLI-54): the file,
// every folder on the way to it and every symbolic link followed (at
// most regfile.MaxFolderLinks, as the kernel's own walk: 40, then ELOOP)
// must be owned by the agent's user or root, and the file and the
// folders writable by no group or other, but a sticky folder (/tmp),
// whose entries only their owners may rename or remove. That user's code
// would run as the agent's, with the caller's params and the agent's key
// file readable (CLI-49). OpenSSH holds its AuthorizedKeysCommand to the
// same (sshd_config(5)). A file missing is left to checkProgram, unless
// the folder it would be in is one others may write (sticky): they could
// put it there once the handler was loaded (CLI-70). program names the
// file in a refusal; m is how the host's mounts are told (mountProbe).
// The walk is regfile.Walk's, the one of regfile.FolderAbove, each part
// judged by judgeProgramPart (CLI-77). It returns real, the path the walk
// resolved path to (no link in it), "" where a part is missing: the one
// answer of the lookup its callers read (isEnv, CLI-92).
func pathWriters(m mountProbe, program, path string) (real string, err error) {
	// The folders the walk examined, by path: a missing part's folder is
	// judged by what the walk saw of it (missingProgram), never looked
	// at again.
	folders := map[string]fs.FileInfo{}
	real, err = regfile.Walk(path, func(p regfile.Part) error {
		if p.Info.IsDir() {
			folders[p.Path] = p.Info
		}
		return judgeProgramPart(m, program, p.Path, p.Info)
	})
	var pe *fs.PathError
	switch {
	case err == nil:
		return real, nil
	case !errors.As(err, &pe):
		return "", err // judgeProgramPart's
	case errors.Is(err, regfile.ErrTooManyLinks):
		return "", fmt.Errorf("program %s is reached through more than %d symbolic links", program, regfile.MaxFolderLinks)
	case pe.Op == "lstat" && errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(pe.Path)
		return "", missingProgram(m, program, dir, folders[dir])
	}
	return "", fmt.Errorf("program %s cannot be examined", program)
}

// judgeProgramPart judges one part of the way to program (at, its lstat
// st): the file, a folder or a symbolic link (its owner alone: a link's
// mode means nothing, and it is replaced only through its folder). The
// mode of a part on a read-only mount is not judged (readOnlyMount); a
// part on a FUSE mount another user made is refused whatever its owner
// and mode say (foreignFUSE, CLI-73).
func judgeProgramPart(m mountProbe, program, at string, st fs.FileInfo) error {
	what := "the file"
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		what = "the symbolic link"
	case st.IsDir():
		what = "the folder"
	}
	if uid, foreign := regfile.ForeignOwner(st); foreign {
		// Numbers the system gave; the paths are the operator's.
		return &exposedProgramError{msg: fmt.Sprintf("program %s: %s %s is owned by another user (uid %d) than the agent's (uid %d) or root", program, what, at, uid, os.Geteuid())}
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil // on its folder's file system, judged before it
	}
	if mounter, foreign := foreignFUSE(m, at); foreign {
		return &exposedProgramError{msg: fmt.Sprintf("program %s: %s %s is on a FUSE file system %s, whose daemon reports any owner and mode", program, what, at, mounter),
			hint: "put the program, and the interpreters its #! lines name, on a file system that is not a FUSE mount of another user than the agent's or root"}
	}
	if st.IsDir() && st.Mode()&fs.ModeSticky != 0 {
		return nil
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 && !readOnlyMount(m, at) {
		return &exposedProgramError{msg: fmt.Sprintf("program %s: %s %s may be written by group or others (mode %04o)", program, what, at, perm)}
	}
	return nil
}

// missingProgram is programWriters' answer for a program whose way ends
// in folder dir (judged, with no link in its path; st, the lstat the walk
// gave it): nil, for checkProgram to call it missing, unless others may
// write dir (a sticky folder) and so create the missing part after the
// load. A dir the walk gave no lstat of is refused (CLI-92).
func missingProgram(m mountProbe, program, dir string, st fs.FileInfo) error {
	if st == nil {
		return fmt.Errorf("program %s cannot be examined", program)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 && !readOnlyMount(m, dir) {
		return &exposedProgramError{msg: fmt.Sprintf("program %s does not exist, and group or others may create it in the folder %s (mode %04o)", program, dir, perm)}
	}
	return nil
}
