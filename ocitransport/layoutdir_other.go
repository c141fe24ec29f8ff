//go:build !linux

package ocitransport

// openLayoutDir opens the folder rel of the layout at top: by its path,
// each element checked a folder and not a link just before
// (openLayoutPathDir); no descriptor walk here.
func openLayoutDir(top, rel string, create bool) (*layoutDir, error) {
	return openLayoutPathDir(top, rel, create)
}

// sub opens the folder rel below d by its path (subByPath).
func (d *layoutDir) sub(rel string, create bool) (*layoutDir, error) {
	return d.subByPath(rel, create)
}
