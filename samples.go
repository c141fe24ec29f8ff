package ampbundle

import "embed"

// Samples is testdata/bundles: the sample bundle sources (translate, geo)
// and their TEST-ONLY keys. Never trust those keys outside tests and the
// demo.
//
//go:embed testdata/bundles/translate testdata/bundles/geo testdata/bundles/keys
var Samples embed.FS
