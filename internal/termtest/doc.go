// Package termtest holds what the tests of human output share to check
// that text from a peer, a mirror or a file cannot drive the terminal it is
// printed on: hostile payloads, and a check of what reached the terminal.
//
// It is imported by tests only.
package termtest
