// Package ampbundle holds the sample bundle sources of testdata/bundles,
// embedded, so that `ampagent demo` runs from a clean clone with nothing
// else. Their TEST-ONLY keys are not embedded. The code of the project is
// in its subpackages.
package ampbundle
