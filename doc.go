// Package ampbundle holds the sample bundle sources and test-only keys of
// testdata/bundles, embedded, so that `ampagent demo` runs from a clean
// clone with nothing else. The code of the project is in its subpackages.
package ampbundle
