//go:build !unix

package bundlebuild

// openDirOnly: no such flag here; locateIn checks what it opened.
const openDirOnly = 0
