//go:build !unix

package bundlebuild

import "io/fs"

// hasOtherNames says whether the file info describes has another name (a
// hard link): not known here (fs.FileInfo carries no link count off
// Unix), so false (docs/SPEC-DECISIONS.md BUILD-9).
func hasOtherNames(fs.FileInfo) bool { return false }
