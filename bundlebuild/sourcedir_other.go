//go:build !unix

package bundlebuild

// openNoWait: opening a file does not block here.
const openNoWait = 0
