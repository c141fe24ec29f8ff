package ampbundle

import "embed"

// Samples is the sample bundle sources of testdata/bundles (translate,
// geo), without their keys: the TEST-ONLY private keys of
// testdata/bundles/keys stay out of every binary (a test in cmd/ampagent
// checks the built tools for them), and `ampagent demo` makes its own
// publisher key at run time.
//
//go:embed testdata/bundles/translate testdata/bundles/geo
var Samples embed.FS
