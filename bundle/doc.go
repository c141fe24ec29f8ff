// Package bundle reads and writes ampbundle files: signed, self-describing
// carriers of capability descriptors (RFC 004 §4.2), the JSON Schemas they
// reference and DID documents, made to cross an air gap on removable media.
//
// A bundle is a CBOR Sequence: a COSE_Sign signed manifest (bundle_id,
// version, expiry, every artifact's key, media type, size and sha-256 or
// sha-512 hash, the capabilities and aliases), then each artifact's bytes.
// docs/FORMAT.md specifies it completely.
//
// Write builds a bundle from a Draft (bundlebuild.LoadSource reads one from a
// source folder). NewReader verifies before anything is used: the signatures
// against a Policy of trusted keys, the manifest's rules, that every signer
// is trusted for the bundle_id, every capability namespace and every
// did:web host it carries, and expiry; Next then yields each artifact only
// once its size and hash match the signed manifest. Memory stays bounded by
// the manifest plus the largest artifact, whatever the bundle's size.
//
// Every refusal is an *amp.Error whose name (ErrBadSignature,
// ErrUntrustedKey, ErrHashMismatch, ErrTruncated, ...) says what was wrong;
// errors.Is matches those names. The package is the format only: it opens
// no file (source folders, part files and temporary files are package
// bundlebuild's), and where a verified bundle goes is the resolver's
// business.
package bundle
