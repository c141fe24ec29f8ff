//go:build !linux

package bundlebuild

import "os"

// openPart opens the regular file target (a part's path, its links
// resolved) and returns it with what was examined before it was opened;
// errNotRegular when target is anything else. Here there is no descriptor
// that opens nothing (O_PATH): openPartByPath examines the name, then
// opens it again, so a node put there in between is opened before it is
// refused (docs/SPEC-DECISIONS.md BUNDLE-12, BUNDLE-17).
func openPart(target string) (*os.File, os.FileInfo, error) {
	return openPartByPath(target)
}
