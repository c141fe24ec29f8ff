package bundle

import "github.com/ampbundle/ampbundle/amp"

// Error names of this package. Every error returned by a Reader or a Writer
// is an *amp.Error carrying one of these names (and no AMP code: a bundle is
// checked on an operator's machine, not on the wire; the registry maps
// resolution failures to 5002). They are errors.Is targets.
const (
	// The signed object.
	ErrUnknownFormat        amp.ErrName = "unknown_format"        // not a v1 bundle: wrong tag, structure, headers or format string
	ErrMalformed            amp.ErrName = "malformed_bundle"      // not strict deterministic CBOR, or a manifest of the wrong shape
	ErrUnsupportedAlgorithm amp.ErrName = "unsupported_algorithm" // a signature that is not EdDSA (-8)
	ErrBadSignature         amp.ErrName = "bad_signature"         // a signature does not verify under the key its kid names
	ErrUntrustedKey         amp.ErrName = "untrusted_key"         // no signature by a trusted key
	ErrUntrustedNamespace   amp.ErrName = "untrusted_namespace"   // signer not trusted for the bundle_id, a capability namespace or a DID
	ErrExpired              amp.ErrName = "expired"               // now >= expires_at
	ErrInconsistent         amp.ErrName = "inconsistent_manifest" // manifest rules (docs/FORMAT.md §4)
	ErrDuplicateSigner      amp.ErrName = "duplicate_signer"      // two signatures by one key
	ErrThreshold            amp.ErrName = "threshold_not_met"     // fewer distinct trusted signers than the scope's threshold

	// The artifacts.
	ErrUnsafeKey     amp.ErrName = "unsafe_key"     // an artifact key that is not a safe relative path
	ErrDuplicateKey  amp.ErrName = "duplicate_key"  // two artifacts with one key
	ErrCountMismatch amp.ErrName = "count_mismatch" // more or fewer artifacts than the manifest lists
	ErrSizeMismatch  amp.ErrName = "size_mismatch"  // an artifact of another size than the manifest says
	ErrHashMismatch  amp.ErrName = "hash_mismatch"  // an artifact whose bytes do not match their hash
	ErrTruncated     amp.ErrName = "truncated"      // the file ends inside an item
	ErrTrailingData  amp.ErrName = "trailing_data"  // bytes after the last artifact
	ErrTooLarge      amp.ErrName = "limit_exceeded" // over a configured cap

	// Building.
	ErrSource amp.ErrName = "invalid_source" // a source folder problem; the message names the file
	ErrIO     amp.ErrName = "io_error"       // reading or writing failed
)

func fail(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}
