//go:build !unix

package ocitransport

import "os"

// extraLinks says whether the file st describes has another name (a hard
// link): not known here (os.FileInfo carries no link count off Unix), so
// false; index.json is still written by rename, never through the link.
func extraLinks(os.FileInfo) bool { return false }
