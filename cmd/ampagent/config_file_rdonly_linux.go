package main

import "golang.org/x/sys/unix"

// readOnlyMount reports whether at lies on a file system mounted read-only
// (statfs's ST_RDONLY): there no one, whatever the mode says, can write
// the file or a folder (a Kubernetes ConfigMap or Secret volume's folders
// are 0777, not sticky, on a read-only mount; docs/SPEC-DECISIONS.md
// CLI-70 amended). Only the root user could remount it writable.
func readOnlyMount(at string) bool {
	var st unix.Statfs_t
	return unix.Statfs(at, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}
