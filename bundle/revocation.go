package bundle

import (
	"crypto/ed25519"
	"sort"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// RevocationFormat is the format string of a revocation statement
// (FORMAT.md §21).
const RevocationFormat = "ampbundle-revocation/1"

// Revocation limits (FORMAT.md §21).
const (
	MaxRevocationSize    = 1 << 20 // bytes of a statement file
	MaxRevocationEntries = 1000    // keys, and bundle versions
)

// ErrInvalidStatement names a statement that is not well formed.
const ErrInvalidStatement amp.ErrName = "invalid_statement"

// Revocation is the payload of a revocation statement: keys and bundle
// versions that must no longer be trusted, said by the keys trusted for
// Scope.
type Revocation struct {
	Format    string          `cbor:"format"`
	Scope     string          `cbor:"scope"`
	CreatedAt string          `cbor:"created_at"`
	Keys      []string        `cbor:"keys,omitempty"`    // did:keys, sorted, unique
	Bundles   []BundleVersion `cbor:"bundles,omitempty"` // sorted by bundle_id then version, unique
}

// BundleVersion names one release of a bundle.
type BundleVersion struct {
	BundleID string `cbor:"bundle_id"`
	Version  uint64 `cbor:"version"`
}

// String is "bundle_id@version".
func (b BundleVersion) String() string {
	return b.BundleID + "@" + strconv.FormatUint(b.Version, 10)
}

func invalidStatement(format string, args ...any) *amp.Error {
	return fail(ErrInvalidStatement, format, args...)
}

// Validate checks the rules of FORMAT.md §21 and sorts nothing: a valid
// revocation is already in its one form.
func (r *Revocation) Validate() error {
	if r.Format != RevocationFormat {
		return invalidStatement("not a %s statement", RevocationFormat)
	}
	if err := ValidateScope(r.Scope); err != nil || strings.HasSuffix(r.Scope, ".") {
		return invalidStatement("the scope must be * or a reverse-domain prefix such as org.example")
	}
	if _, err := statementTime(r.CreatedAt); err != nil {
		return err
	}
	if len(r.Keys) == 0 && len(r.Bundles) == 0 {
		return invalidStatement("a revocation names at least one key or bundle version")
	}
	if len(r.Keys) > MaxRevocationEntries || len(r.Bundles) > MaxRevocationEntries {
		return fail(ErrTooLarge, "a revocation names at most %d keys and %d bundle versions", MaxRevocationEntries, MaxRevocationEntries)
	}
	for i := range r.Keys {
		if err := checkKeyAt(r.Keys, i, "revoked"); err != nil {
			return err
		}
	}
	for i, b := range r.Bundles {
		if err := ValidateBundleID(b.BundleID); err != nil || b.Version < 1 {
			return invalidStatement("revoked bundle %d is not a bundle id with a version >= 1", i+1)
		}
		if !underScope(b.BundleID, r.Scope) {
			return invalidStatement("revoked bundle %s is not under the statement's scope %s", b.BundleID, r.Scope)
		}
		if i > 0 {
			p := r.Bundles[i-1]
			if p.BundleID > b.BundleID || p.BundleID == b.BundleID && p.Version >= b.Version {
				return invalidStatement("revoked bundles must be sorted by bundle_id then version, and unique")
			}
		}
	}
	return nil
}

// Normalize sorts and deduplicates the keys and bundle versions.
func (r *Revocation) Normalize() {
	sort.Strings(r.Keys)
	r.Keys = uniqStrings(r.Keys)
	sort.Slice(r.Bundles, func(i, j int) bool {
		a, b := r.Bundles[i], r.Bundles[j]
		return a.BundleID < b.BundleID || a.BundleID == b.BundleID && a.Version < b.Version
	})
	out := r.Bundles[:0]
	for i, b := range r.Bundles {
		if i == 0 || b != r.Bundles[i-1] {
			out = append(out, b)
		}
	}
	r.Bundles = out
}

func uniqStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// SignRevocation validates r and returns the statement signed by keys.
func SignRevocation(r *Revocation, keys []ed25519.PrivateKey) ([]byte, error) {
	return signStatement(MediaTypeRevocation, "revocation", r, keys)
}

// ParseRevocation decodes a revocation statement and checks its form
// (FORMAT.md §21): the COSE_Sign of §2 with the revocation content type,
// a closed deterministic payload, the rules of Validate. Signatures are
// checked by VerifyStatement.
func ParseRevocation(data []byte) (*Revocation, *SignedObject, error) {
	return parseStatement[Revocation](statementForm{mediaType: MediaTypeRevocation, maxSize: MaxRevocationSize,
		maxArray: MaxRevocationEntries, maxPairs: 8, file: "revocation statement", name: "revocation"}, data)
}

// VerifyStatement checks that a statement about scope is signed by enough
// keys of p (FORMAT.md §21): the distinct trusted keys whose signatures
// verify and who are trusted for scope itself must reach the largest
// threshold p sets for scope, a scope containing it or a scope under it
// (Policy.RequiredWithin). It returns the keys that counted.
//
// Every other signature must verify too, against the key its kid names
// (VerifyAll; bad_signature), whether or not p knows it: a store keeps one
// file per statement (the first applied, docs/SPEC-DECISIONS.md TRUST-19)
// and its mirror relays that file, so a copy carrying a forged signature
// under the kid of a key some other store trusts, applied first, would
// otherwise be the only file relayed, and refused as tampered wherever
// that key is trusted.
func VerifyStatement(obj *SignedObject, p *Policy, scope string) ([]TrustedKey, error) {
	verified, err := obj.Verify(p)
	if err != nil {
		return nil, err
	}
	if err := obj.VerifyAll(); err != nil {
		return nil, err
	}
	var ptrs, in []*TrustedKey
	for i := range verified {
		k := &verified[i]
		ptrs = append(ptrs, k)
		if k.coversScope(scope) {
			in = append(in, k)
		}
	}
	need, by := p.RequiredWithin(scope)
	if len(in) >= need && len(in) > 0 {
		out := make([]TrustedKey, len(in))
		for i, k := range in {
			out[i] = *k
		}
		return out, nil
	}
	d := ThresholdDetails{Subject: "statement", Name: scope, Scope: by, Threshold: need, Valid: len(in), Signers: views(ptrs, in)}
	if len(in) == 0 {
		return nil, fail(ErrUntrustedNamespace, "no signer of the statement is trusted for its scope %s (%s)", scope, describe(d.Signers)).WithDetails(d)
	}
	return nil, fail(ErrThreshold, "the statement about %s needs %d valid signatures by distinct keys trusted for it (threshold of scope %s); found %d (%s)",
		scope, need, scopeLabel(by), len(in), describe(d.Signers)).WithDetails(d)
}

// coversScope reports whether the key speaks for everything under scope:
// one of its scopes is scope or contains it ("*" only by "*"), and no
// Except scope overlaps it.
func (k *TrustedKey) coversScope(scope string) bool {
	for _, e := range k.Except {
		if ScopesOverlap(e, scope) {
			return false // a statement about scope reaches where the key was revoked
		}
	}
	for _, s := range k.Scopes {
		if s == "*" || scope != "*" && underScope(scope, s) {
			return true
		}
	}
	return false
}

// ScopesUnder reports whether every scope of a key lies under scope: what
// a statement about scope may revoke.
func ScopesUnder(keyScopes []string, scope string) bool {
	for _, s := range keyScopes {
		if scope != "*" && (s == "*" || !underScope(s, scope)) {
			return false
		}
	}
	return true
}

// KeyCoversScope reports whether scopes contain everything under scope
// (one of them is scope or contains it; for "*", only "*"). It knows
// nothing of revocations: to ask whether a trusted key speaks for scope,
// use TrustedKey.CoversScope, which honours its Except scopes.
func KeyCoversScope(keyScopes []string, scope string) bool {
	k := TrustedKey{Scopes: keyScopes}
	return k.coversScope(scope)
}

// CoversScope reports whether the key speaks for everything under scope:
// one of its scopes is scope or contains it ("*" only by "*"), and none of
// its Except scopes (where it was revoked) overlaps scope.
func (k TrustedKey) CoversScope(scope string) bool { return k.coversScope(scope) }

// VerifyFor checks that a signed object is signed as a bundle with manifest
// m must be (FORMAT.md §5 step 4): the distinct trusted keys of p whose
// signatures verify and that are trusted for the bundle id and every
// capability namespace of m reach the largest threshold of those names. It
// returns the keys that counted. A statement about a bundle line
// (a heartbeat, FORMAT.md §23) and the re-count of an installed bundle's
// remaining signers (§21) use it.
func VerifyFor(obj *SignedObject, p *Policy, m *Manifest) ([]TrustedKey, error) {
	verified, err := obj.Verify(p)
	if err != nil {
		return nil, err
	}
	ptrs := make([]*TrustedKey, len(verified))
	for i := range verified {
		ptrs[i] = &verified[i]
	}
	in, err := admit(p, m, ptrs)
	if err != nil {
		return nil, err
	}
	out := make([]TrustedKey, len(in))
	for i, k := range in {
		out[i] = *k
	}
	return out, nil
}

// ManifestUnder reports whether the bundle id and every capability
// namespace of m lie under scope: what a statement about scope may reach.
func ManifestUnder(m *Manifest, scope string) bool {
	if !underScope(m.BundleID, scope) {
		return false
	}
	for _, ns := range m.Namespaces() {
		if !underScope(ns, scope) {
			return false
		}
	}
	return true
}

// ScopesOverlap reports whether two scopes share a name: one equals or
// contains the other.
func ScopesOverlap(a, b string) bool {
	return a == "*" || b == "*" || underScope(a, b) || underScope(b, a)
}
