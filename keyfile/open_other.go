//go:build !unix

package keyfile

// openNoWait: opening a file does not block here.
const openNoWait = 0
