//go:build race

package bundlebuild

// raceBuild: the race detector slows a build several times over and
// changes what it allocates; the heap measurements skip under it (the
// plain go test run measures them).
const raceBuild = true
