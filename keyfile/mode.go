//go:build !windows

package keyfile

import "io/fs"

// judgeMode refuses permission bits that give group or others any
// access: where mode bits are the access rights, a key, passphrase or
// token file is its owner's alone.
func judgeMode(perm fs.FileMode, what string) error {
	if perm&0o077 != 0 {
		return fail(ErrInsecureKeyFile, "%s is readable or writable by group or others (mode %04o); run chmod 600 on it", what, perm)
	}
	return nil
}
