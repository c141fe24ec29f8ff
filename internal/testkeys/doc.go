// Package testkeys holds the key material several packages' tests share:
// the Ed25519 public keys no one holds the private key of
// (docs/SPEC-DECISIONS.md AMP-14), read from the one data file beside this
// package and checked on load.
//
// It is imported by tests only (deps_test.go at the repository root keeps
// it so).
package testkeys
