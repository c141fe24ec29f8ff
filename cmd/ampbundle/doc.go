// Command ampbundle builds, verifies and inspects signed capability-schema
// bundles, and manages the local registry they are imported into.
//
// See docs/CLI.md for every command's contract, docs/reference/ for its flags, and docs/FORMAT.md
// for the file format.
package main
