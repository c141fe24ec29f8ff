// Package ampbundle holds the sample bundle sources and test-only keys of
// testdata/bundles, embedded, so that `ampagent demo` runs from a clean
// clone with nothing else. The code of the project is in its subpackages.
package ampbundle

import "embed"

// Samples is testdata/bundles: the sample bundle sources (translate, geo)
// and their TEST-ONLY keys. Never trust those keys outside tests and the
// demo.
//
//go:embed testdata/bundles/translate testdata/bundles/geo testdata/bundles/keys
var Samples embed.FS
