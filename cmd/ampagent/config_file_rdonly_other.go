//go:build unix && !linux

package main

// readOnlyMount: a read-only mount is not told here; every mode is
// judged (docs/SPEC-DECISIONS.md CLI-70 amended).
func readOnlyMount(string) bool { return false }
