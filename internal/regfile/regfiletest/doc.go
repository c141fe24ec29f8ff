// Package regfiletest is for tests of code that must never open a node
// put where a regular file was: a FIFO stands in for the device, as the
// node whose open is observable; and for code that judges a file's owner
// and mode: Stat gives the fstat result of a chosen owner and mode.
package regfiletest
