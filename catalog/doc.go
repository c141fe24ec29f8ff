// Package catalog is the read model of a store, and the read-only HTML
// catalog at /ui/ rendered from it.
//
// Read takes one consistent read of a store (the resolver read API: the
// bundles, the capabilities and their descriptors, the schemas they name,
// the trust keys, thresholds, freshness bounds, revocations and the audit
// chain's head), retrying while the store generation moves under it, and
// computes each capability's compatibility matrix with package compat: in
// the read (Parts.Compat), or for the pages when a page asks for it, from
// the schemas the read kept, within a budget of comparisons and of
// findings kept (Parts.LazyCompat, PageReadOptions). The model is
// immutable but for the matrices it keeps so (for its life, up to a
// byte bound): 'ampbundle ls --json'
// and 'ampbundle compat --json' print views of it (Listing, Matrices), and
// Handler renders it as pages.
// A bundle's signed manifest is kept as a ManifestView, the view 'ampbundle
// inspect', 'verify' and 'build' print with --json, so the bundle page and
// the CLI show a bundle the same way.
//
// Handler serves GET and HEAD without a body only (CATALOG-25), and
// to a document of another site only a top-level navigation the user's
// click started (Fetch Metadata: an image, a frame or a fetch of another
// site is 403 cross_site_refused before the store is read, CATALOG-34,
// and so is a navigation without Sec-Fetch-User, by a page linking the
// address, CATALOG-36), isolates its windows from their openers
// (Cross-Origin-Opener-Policy, CATALOG-37), renders
// server-side with html/template (every publisher-controlled value is
// escaped, and long ones truncated;
// a schema's pieces by schemaHTML), embeds its one stylesheet, uses no
// script at all, and sends a strict Content-Security-Policy. A page is
// rendered only for a GET whose client is still there (a HEAD gets the
// status and headers alone, and a HEAD of a compatibility page computes
// no matrix, CATALOG-39; a client gone gets its connection closed, no
// answer), streams from its first schema on (HTTP/1.1 and later, whose
// answers mark their end, CATALOG-27), so that a client gone unseen
// stops the rendering at the first failed write (CATALOG-26),
// and its client must read it at Options.MinDataRate, else it is cut off
// and its page slot freed. The schemas the pages render take their time
// from a rendering budget, in all and by peer (Options.RenderBurst,
// RenderRate), as the matrices do below. It takes the model again when the store
// generation changes or a bundle's expiry passes, checked at most every
// Options.Refresh. Every list is paged at PageSize or cut (RowVersions,
// MaxJoined). A schema's rendering is linear in its size and stops at
// MaxRenderBytes, markup included, and so do a compatibility page's
// findings (at most MaxCellFindings a pair); a matrix compares the
// newest DefaultMaxMatrixVersions versions of a capability, and its page
// and the page of a version left out say so (CATALOG-42). The matrices the pages
// compute take their time from a compute budget, in all and by peer
// (Options.ComputeBurst, ComputeRate): past it a page that would compute
// one is refused, 429 or 503 with Retry-After. A "$ref" is followed or
// linked only in a schema position, and only to an artifact signed as a
// JSON Schema; the manifest's publisher is shown as a claim unless a
// verified signer has its DID.
package catalog
