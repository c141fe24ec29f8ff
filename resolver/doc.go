// Package resolver is the local registry of the Offline Registry Profile
// (RFC 004 §5.3): a bbolt store into which signed bundles are imported, all
// or nothing, and from which every schema an agent uses is resolved, hash
// verified before use, with no network or file access. Any doubt fails
// closed with 5002 UNAVAILABLE.
//
// # Model
//
// A Store is one bbolt file (docs/ARCHITECTURE.md, "The store") with these buckets:
//
//	trust        publisher keys and the reverse-domain scopes they may sign for
//	bundles      installed bundles, each with its signed manifest exactly as received
//	blobs        artifact bytes, content-addressed ("sha-256:<hex>"), shared across bundles
//	blobrefs     how many index entries reference each blob
//	index        (bundle_id, artifact_key) -> blob, media type, size
//	descriptors  (capability name, version) -> descriptor and providing bundle
//	aliases      legacy type -> canonical name
//	dids         DID -> (bundle_id, artifact_key) of its document
//	schemaids    (bundle_id, $id) -> artifact_key, for $ref resolution
//	highwater    bundle_id -> highest version ever imported (kept after removal)
//	audit        hash-chained log of imports, downgrades, removals, trust changes
//	pending      journal of an import whose blobs are staged but not committed
//	meta         schema version, generation, audit head
//
// The agent's idempotency ledger is not in this file: it lives in a bbolt
// file of its own beside it (package agent/ledger, <db>.ledger), so the
// registry stays read-mostly and small. Stores written by earlier builds
// may hold unused "replay" and "replay_exp" buckets; they are ignored.
//
// The store's schema version is checked on every open. Its generation
// changes with every import, removal and trust change; caches (compiled
// schemas, the catalog, DID documents) and paging cursors compare it.
//
// # Import
//
// Import verifies a bundle with bundle.Reader against the trust keys
// (signature and scope before any artifact, every artifact's hash as it
// streams), refuses rollbacks, conflicting capability ids, aliases and DIDs,
// stages the verified artifacts as blobs in small transactions under the
// pending journal (so memory is bounded by the largest artifact, not the
// bundle), and then makes everything visible in one final transaction. A
// failed import, and the next Open after a crash, delete the staged blobs:
// the store is exactly as it was. Readers see the old state or the new one,
// never a mix, because nothing references a staged blob before the final
// commit.
//
// # Trust
//
// What the store trusts (keys and scopes, thresholds, trust statements,
// revocations, heartbeats, freshness policies, signed-time floors) is
// decided by package trust, on a value: each trust change loads that
// state in its write transaction (truststate.go), calls trust, and saves
// the returned effects (records, the statement kept, audit entries) in the
// same transaction. Resolution asks trust whether an installed bundle is
// stale or past its floor.
//
// # Resolution
//
// Resolve returns the verified bytes of a schema reference (bundle_id and
// artifact_key are required; a uri is never fetched). Schema returns the
// compiled JSON Schema, built from verified bytes only, compiled once per
// (root hash, bundle, key) and re-checked against the store when the
// generation changes. Catalog is an immutable snapshot of the installed
// descriptors and aliases; ResolveDID serves DID documents of installed
// bundles (amp.DIDResolver).
//
// # Errors
//
// Resolution failures are *amp.Error with code 5002 and a name saying which
// (bundle_missing, artifact_missing, blob_unreadable, hash_mismatch,
// bundle_expired, no_local_locator, schema_unavailable). Import and store
// errors carry the bundle package's names (bad_signature, untrusted_key,
// ...) or this package's (rollback, capability_conflict, store_in_use, ...).
package resolver
