//go:build !windows

package keyfile

import "io/fs"

// judgeOwnerMode is the judgement of a key, passphrase or token file
// where mode bits are the access rights (Unix), pure over the values the
// reader takes from the open file: the file's owner uid, the effective
// uid of the process reading it, and the file's permission bits. The
// owner must be this process's user or root, as OpenSSH's
// safe_path (misc.c) requires of the files it trusts: another account
// that owns the file may read it (a private key it knows signs as this
// process) or rewrite it, chmod 600 or not; root may do either anyway.
// Then no bit may give group or others any access (judgeMode).
func judgeOwnerMode(owner, euid uint32, perm fs.FileMode, what string) error {
	if owner != euid && owner != 0 {
		// The uids are numbers the system gave, not text another user
		// chose: they are printed, as ls -n prints them.
		return fail(ErrInsecureKeyFile, "%s is owned by another user (uid %d) than the one reading it (uid %d) or root; run chown on it, then chmod 600", what, owner, euid)
	}
	return judgeMode(perm, what)
}

// judgeMode refuses permission bits that give group or others any
// access.
func judgeMode(perm fs.FileMode, what string) error {
	if perm&0o077 != 0 {
		return fail(ErrInsecureKeyFile, "%s is readable or writable by group or others (mode %04o); run chmod 600 on it", what, perm)
	}
	return nil
}
