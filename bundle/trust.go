package bundle

import (
	"bytes"
	"crypto/ed25519"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TrustedKey is a publisher key and what it may publish.
type TrustedKey struct {
	// Name is the operator's label for the key.
	Name string
	// Key is the Ed25519 public key.
	Key ed25519.PublicKey
	// Scopes are reverse-domain prefixes ("org.example", or "*" for
	// everything). A bundle is in scope when its bundle_id, the namespace
	// of every capability it carries and the host of every did:web
	// document it carries each fall under one of the scopes.
	Scopes []string
	// Except are scopes the key counts for nowhere under, whatever Scopes
	// say: where it was revoked (FORMAT.md §21). A key trusted for "*"
	// after the keys of com.acme revoked it counts for everything but
	// com.acme and the names under it.
	Except []string
}

// KeyID returns the COSE kid of an Ed25519 public key: the UTF-8 bytes of
// its did:key (FORMAT.md §3).
func KeyID(pub ed25519.PublicKey) []byte { return []byte(amp.DIDKey(pub)) }

// Policy is the set of keys a Reader trusts. The zero Policy trusts nothing.
type Policy struct {
	Keys []TrustedKey
	// Thresholds maps a scope ("*" or a reverse-domain prefix) to the
	// number of distinct trusted keys that must sign what lies under it
	// (FORMAT.md §5). A name under several scopes needs the largest of
	// their thresholds; a name under none needs 1.
	Thresholds map[string]int
}

// Required returns the number of distinct trusted signers a name (a bundle
// id, a capability namespace, a reversed did:web host) needs, and the scope
// that sets it ("" for the default of 1).
func (p *Policy) Required(name string) (int, string) {
	need, by := 1, ""
	if p == nil {
		return need, by
	}
	for sc, n := range p.Thresholds {
		if underScope(name, sc) && (n > need || n == need && by != "" && sc > by) {
			need, by = n, sc
		}
	}
	return need, by
}

// RequiredWithin returns the number of distinct trusted signers a
// statement about scope needs (FORMAT.md §21): the largest threshold of
// scope, of every scope containing it, and of every scope under it (what
// the statement changes for scope reaches every narrower scope: keys it
// adds count there, keys it retires or revokes may be trusted there), and
// the scope that sets it ("" for the default of 1).
func (p *Policy) RequiredWithin(scope string) (int, string) {
	need, by := p.Required(scope)
	if p == nil {
		return need, by
	}
	for sc, n := range p.Thresholds {
		if (scope == "*" || sc != "*" && underScope(sc, scope)) && (n > need || n == need && by != "" && sc > by) {
			need, by = n, sc
		}
	}
	return need, by
}

// RequiredFor returns the number of distinct trusted signers m needs: the
// largest threshold over its bundle id and capability namespaces.
func (p *Policy) RequiredFor(m *Manifest) int {
	n, _, _ := p.requiredFor(m)
	return n
}

// requiredFor returns the threshold a manifest needs: the largest over its
// bundle id and capability namespaces, with the name and scope setting it.
func (p *Policy) requiredFor(m *Manifest) (need int, name, scope string) {
	need, scope = p.Required(m.BundleID)
	name = m.BundleID
	for _, ns := range m.Namespaces() {
		if n, sc := p.Required(ns); n > need {
			need, name, scope = n, ns, sc
		}
	}
	return need, name, scope
}

// findByDecodingAbove is the number of keys above which find reads the
// key out of the kid (KeyFromKID, about five did:key encodings of work)
// rather than encoding the did:key of every key of the policy.
const findByDecodingAbove = 8

// find returns the trusted key whose kid is kid (the first, in p's
// order). Encoding every key's did:key for each signature made a
// signature cost the policy's keys (a base58 encoding each, about 2 µs):
// with the 1,000 keys an authority may keep trusted (TRUST-25), 8,000
// encodings per object of MaxSignatures signatures, and a revocation's
// recount of each installed bundle whose record names no signers pays it
// per bundle (docs/SPEC-DECISIONS.md SCALE-25). For a large policy the
// kid is decoded once and compared with each key's bytes; the one key it
// names is then confirmed by its own did:key, so the answer is the
// encoding's. A kid that does not decode as an Ed25519 did:key (no key
// of 32 bytes on the curve has it) is looked for as before.
func (p *Policy) find(kid []byte) (*TrustedKey, bool) {
	if p == nil {
		return nil, false
	}
	if len(p.Keys) > findByDecodingAbove {
		if pub, ok := KeyFromKID(string(kid)); ok {
			for i := range p.Keys {
				if bytes.Equal(p.Keys[i].Key, pub) && string(KeyID(p.Keys[i].Key)) == string(kid) {
					return &p.Keys[i], true
				}
			}
			return nil, false
		}
	}
	for i := range p.Keys {
		if string(KeyID(p.Keys[i].Key)) == string(kid) {
			return &p.Keys[i], true
		}
	}
	return nil, false
}

// ValidateScope checks one scope: "*" or a reverse-domain prefix.
func ValidateScope(s string) error {
	if err := capability.ValidateNamespacePrefix(s); err != nil {
		return fail(ErrInconsistent, "a trust scope must be \"*\" or a reverse-domain prefix such as org.example").WithCause(err)
	}
	return nil
}

// underScope reports whether the reverse-domain name (a bundle id, a
// capability namespace or a reversed did:web host) equals the scope or lies
// under it at a label boundary.
func underScope(name, scope string) bool {
	if scope == "*" {
		return true
	}
	scope = strings.TrimSuffix(scope, ".")
	return name == scope || strings.HasPrefix(name, scope+".")
}

// excepted reports whether name lies under one of the key's Except
// scopes.
func (k *TrustedKey) excepted(name string) bool {
	for _, s := range k.Except {
		if underScope(name, s) {
			return true
		}
	}
	return false
}

// covers reports whether one of the key's scopes covers name (and none of
// its Except scopes does).
func (k *TrustedKey) covers(name string) bool {
	if k.excepted(name) {
		return false
	}
	for _, s := range k.Scopes {
		if underScope(name, s) {
			return true
		}
	}
	return false
}

// coversManifest reports whether the key may publish m: its bundle_id and
// every namespace m reaches (Namespaces: those of its capabilities and of
// its alias keys that are capability names).
func (k *TrustedKey) coversManifest(m *Manifest) bool {
	if !k.covers(m.BundleID) {
		return false
	}
	for _, ns := range m.Namespaces() {
		if !k.covers(ns) {
			return false
		}
	}
	return true
}

// DIDScopeName returns the reverse-domain name a DID document is scoped by:
// for did:web:<host>[:path...] the host's labels reversed
// ("did:web:agents.example.org:x" → "org.example.agents"). Other DID methods
// have no domain; they can only be published under the scope "*" (ok is
// false).
func DIDScopeName(did string) (string, bool) {
	rest, ok := strings.CutPrefix(amp.BareDID(did), "did:web:")
	if !ok {
		return "", false
	}
	host, _, _ := strings.Cut(rest, ":")
	host = strings.ToLower(host)
	// A port is percent-encoded ("example.com%3A8443"); it does not change
	// who owns the domain.
	if i := strings.Index(host, "%3a"); i >= 0 {
		host = host[:i]
	}
	labels := strings.Split(host, ".")
	if len(labels) < 2 {
		return "", false
	}
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	name := strings.Join(labels, ".")
	if capability.ValidateNamespacePrefix(name) != nil {
		return "", false
	}
	return name, true
}

// coversDID reports whether the key may publish a DID document for did.
func (k *TrustedKey) coversDID(did string) bool {
	name, ok := DIDScopeName(did)
	if ok && k.excepted(name) || !ok && len(k.Except) > 0 {
		return false
	}
	for _, s := range k.Scopes {
		if s == "*" {
			return true
		}
	}
	return ok && k.covers(name)
}

// KeyCoversManifest reports whether key k may publish a bundle with
// manifest m: its scopes cover the bundle id and every capability
// namespace (FORMAT.md §5 step 4).
func KeyCoversManifest(k TrustedKey, m *Manifest) bool { return k.coversManifest(m) }

// ValidTrustName reports whether n can name a trusted key: 1 to 64
// characters of [A-Za-z0-9._-@], as the keys a trust statement adds are
// named (docs/FORMAT.md §22).
func ValidTrustName(n string) bool { return validName(n) }
