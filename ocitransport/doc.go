// Package ocitransport carries bundles and their signed statements through
// OCI registries (the distribution API, with oras-go) and OCI image
// layouts (a folder, or a tar of one), as specified in docs/FORMAT.md,
// "Bundles in OCI registries and layouts".
//
// A bundle file travels as one artifact whose layers, concatenated, are the
// file byte for byte (one layer, or several of at most MaxLayerSize). A
// revocation, trust or heartbeat statement travels as an artifact whose
// subject is the bundle's manifest (OCI 1.1 referrers; on a registry
// without the referrers API, the referrers tag schema of the distribution
// specification).
//
// A registry is untrusted transport: every manifest and blob is bounded
// (Options.MaxManifestSize, Options.MaxBlobSize, the descriptor's size),
// checked against its digest while it streams, and a pulled file is written
// to a temporary file and renamed only when every check passed. What is
// pulled is then verified by the store's import exactly as a file is
// (signatures, threshold, scope, hashes, rollback). Redirects go only to
// the registry's own host or to hosts the Options allow, at most
// MaxRedirects of them; plain HTTP only to loopback or a named host.
package ocitransport
