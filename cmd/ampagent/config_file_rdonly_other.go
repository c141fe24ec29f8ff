//go:build unix && !linux

package main

// readOnlyMount: a read-only mount is not told here; every mode is
// judged (docs/SPEC-DECISIONS.md CLI-70 amended).
func readOnlyMount(mountProbe, string) bool { return false }

// foreignFUSE: a FUSE mount's maker is not told here (macFUSE, FreeBSD's
// fusefs); its parts are judged by what the daemon reports
// (docs/SPEC-DECISIONS.md CLI-73).
func foreignFUSE(mountProbe, string) (string, bool) { return "", false }

// mountProbe: nothing of the mounts is told here.
type mountProbe struct{}

// hostMounts is the host's mountProbe.
func hostMounts() mountProbe { return mountProbe{} }
