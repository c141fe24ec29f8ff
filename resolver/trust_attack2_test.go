package resolver

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// Reproductions of the holes a second review (r13) found in the trust
// code after issue 13: each test asserts the safe behaviour.

// TestExpiredBundleDIDServedFromCache: ResolveDID caches a DID document per
// store generation and returns the cached one without looking at the
// bundle's expiry again, so once a bundle expires by the clock (no store
// change), its DID document keeps resolving; Resolve of its artifacts
// fails 5002 bundle_expired at the same moment.
func TestExpiredBundleDIDServedFromCache(t *testing.T) {
	clock := testNow
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return clock } })
	exp := testNow.Add(time.Hour)
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, sampleKey(t, "example-publisher")))
	const did = "did:web:translator.example.org"
	if _, err := s.ResolveDID(t.Context(), did); err != nil {
		t.Fatal(err)
	}
	clock = testNow.Add(2 * time.Hour)
	_, rerr := s.Resolve(descriptorRef(t, s))
	if _, err := s.ResolveDID(t.Context(), did); err == nil {
		t.Fatalf("bundle expired an hour ago (Resolve: %v), yet its DID document still resolves from the cache", rerr)
	}
}

// TestVersionRevocationByKeyBelowBundleThreshold: a revocation of bundle
// versions is counted against its scope (the bundle id's prefix) only,
// never against the threshold of the bundle's capability namespaces: one
// key, below what the bundle needs, fails the installed bundle closed and
// pre-revokes its next versions. (The key path of failClosed requires the
// manifest to lie wholly under the scope; the version path does not.)
func TestVersionRevocationByKeyBelowBundleThreshold(t *testing.T) {
	s, _, e2, b := splitStore(t)
	mustImport(t, s, b(1))
	var vs []bundle.BundleVersion
	for v := uint64(1); v <= 50; v++ {
		vs = append(vs, bundle.BundleVersion{BundleID: "org.example.tools.translate", Version: v})
	}
	res, err := s.ApplyRevocation(revocation(t, "org.example.tools", nil, vs, e2))
	if err == nil {
		t.Fatalf("one key below the bundle's threshold of 2 revoked it and its next 49 versions: %+v", res)
	}
	if !errors.Is(err, bundle.ErrThreshold) {
		t.Logf("refused with %v", err)
	}
}

// splitStore trusts the example publisher and e2 (seed 71) for org.example;
// the capability namespace org.example.translate needs 2 keys, while the
// bundle id org.example.tools.translate (threshold 1) does not: a line
// whose id lies in a weaker scope than its capabilities.
func splitStore(t *testing.T) (s *Store, example, e2 ed25519.PrivateKey, bundleBytes func(v uint64) []byte) {
	t.Helper()
	s = newStore(t)
	example, e2 = sampleKey(t, "example-publisher"), testKeyN(71)
	if err := s.TrustAdd("e2", pub(e2), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustSetThreshold("org.example.translate", 2); err != nil {
		t.Fatal(err)
	}
	bundleBytes = func(v uint64) []byte {
		return cosignedDraft(t, v, func(d *bundle.Draft) { d.BundleID = "org.example.tools.translate" }, example, e2)
	}
	return s, example, e2, bundleBytes
}

// TestRevocationRecountIgnoresDIDThreshold: the DID document a bundle
// carries (did:web:translator.example.org, scope org.example.translator)
// needs 3 signers at import (FORMAT §5 step 7), but the recount of the
// remaining signers after a revocation (failClosed -> VerifyFor) checks
// only the bundle id and namespaces: with one of the three revoked, the
// bundle stays served and its DID document resolves, vouched for by 2.
func TestRevocationRecountIgnoresDIDThreshold(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	example, e2, e3 := sampleKey(t, "example-publisher"), testKeyN(71), testKeyN(72)
	for n, k := range map[string]ed25519.PrivateKey{"e2": e2, "e3": e3} {
		if err := s.TrustAdd(n, pub(k), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example.translator", 3); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosignedDraft(t, 1, nil, example, e2, e3))
	res, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(e3)}, nil, example, e2, e3))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FailedClosed) == 0 {
		doc, derr := s.ResolveDID(t.Context(), "did:web:translator.example.org")
		t.Fatalf("DID threshold 3, one of 3 signers revoked: nothing failed closed; did resolves: %v (err %v)", doc != nil, derr)
	}
}

// TestRevocationDodgedByKeyTrustedForASecondScope: key k is trusted for
// org.example and com.acme. org.example's keys (their full threshold)
// revoke it and, in the same statement, a bundle version: the whole
// statement is refused (revocation_out_of_scope), so k stays trusted for
// org.example and the version stays installable. A compromised key is
// shielded from its own scope's owners by being trusted somewhere else.
func TestRevocationDodgedByKeyTrustedForASecondScope(t *testing.T) {
	s := rotationStore(t) // a (seed 41) for org.example
	k := testKeyN(81)
	if err := s.TrustAdd("k", pub(k), []string{"com.acme", "org.example"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(k)},
		[]bundle.BundleVersion{{BundleID: "org.example.translate", Version: 7}}, testKeyN(41)))
	keys, _ := s.TrustList()
	for _, tk := range keys {
		if tk.Name == "k" {
			for _, sc := range tk.Scopes {
				if sc == "org.example" {
					t.Fatalf("org.example's revocation of k left k trusted for org.example (err %v)", err)
				}
			}
		}
	}
}

// TestRetirementDodgedByKeyTrustedForASecondScope: the same hole through a
// trust statement's retire list: org.example's threshold retires k for
// org.example even though k is also trusted for com.acme, where it stays.
func TestRetirementDodgedByKeyTrustedForASecondScope(t *testing.T) {
	s := rotationStore(t) // a (seed 41) for org.example
	a, b, k := testKeyN(41), testKeyN(42), testKeyN(81)
	if err := s.TrustAdd("k", pub(k), []string{"com.acme", "org.example"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"b": b}, []ed25519.PrivateKey{k}, a))
	if err != nil {
		t.Fatalf("org.example's trust statement retiring k was refused: %v", err)
	}
	if len(res.Retired) != 1 || res.Retired[0] != "k" {
		t.Fatalf("retired %v, want [k]", res.Retired)
	}
	keys, _ := s.TrustList()
	var scopes []string
	for _, tk := range keys {
		if tk.Name == "k" {
			scopes = tk.Scopes
		}
	}
	if len(scopes) != 1 || scopes[0] != "com.acme" {
		t.Fatalf("k is trusted for %v after org.example retired it, want [com.acme]", scopes)
	}
}

// TestHeartbeatFreezeByKeyBelowLineThreshold: one key, below the threshold
// of the line's capabilities, signs a heartbeat while the line is not
// installed (fresh site, or after rm). It is accepted (counted on the
// bundle id alone), never vouches for the installed bundle, yet every
// later genuine heartbeat (signed by the full threshold) is refused as
// "older": freshness for the line is silently switched off and a stale
// bundle keeps being served.
func TestHeartbeatFreezeByKeyBelowLineThreshold(t *testing.T) {
	s, example, e2, b := splitStore(t)
	const line = "org.example.tools.translate"
	// The attacker: e2 alone, created_at far ahead, version within the cap.
	if _, err := s.ApplyHeartbeat(heartbeat(t, line, 1_000_000, testNow.Add(50*365*24*time.Hour), e2)); err != nil {
		t.Logf("under-threshold heartbeat refused (safe): %v", err)
	}
	mustImport(t, s, b(1))
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	// The genuine publisher, both keys: the line is at version 5.
	res, err := s.ApplyHeartbeat(heartbeat(t, line, 5, testNow.Add(time.Hour), example, e2))
	if err != nil {
		t.Fatalf("a heartbeat signed by the line's full threshold is refused because of one signed by a single key below it: %v", err)
	}
	if res.Stale == "" {
		t.Fatalf("installed version 1 is 4 versions behind with max 1, yet not stale: %+v", res)
	}
}

// TestPreRevocationByLeafKeyBlocksRootKey: item 6 of the earlier review,
// still open for parent scopes: one key trusted only for com.acme
// pre-revokes a key nobody trusts yet; the operator can then never trust
// that key for "*" (nor a rotation of "*" add it), since "*" overlaps
// every scope, and revocations cannot be undone.
func TestPreRevocationByLeafKeyBlocksRootKey(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	root := testKeyN(91)
	if _, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(root)}, nil, sampleKey(t, "acme-publisher"))); err != nil {
		t.Logf("pre-revocation refused (safe): %v", err)
	}
	if err := s.TrustAdd("root", pub(root), []string{"*"}); err != nil {
		t.Fatalf("one com.acme key blocked the operator from trusting a new root key for *: %v", err)
	}
}

// TestRevokedKeyTrustedBroaderCountsNowhereItWasRevoked: once com.acme's
// keys have revoked k, trusting k for "*" (allowed, so that a leaf scope
// cannot block a root key) does not let k count for com.acme's names, for
// a DID of its domain, or for a statement reaching com.acme.
func TestRevokedKeyTrustedBroaderCountsNowhereItWasRevoked(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	k := testKeyN(91)
	if _, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(k)}, nil, sampleKey(t, "acme-publisher"))); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("root", pub(k), []string{"*"}); err != nil {
		t.Fatal(err)
	}
	p, err := s.policy()
	if err != nil {
		t.Fatal(err)
	}
	var root bundle.TrustedKey
	for _, tk := range p.Keys {
		if tk.Name == "root" {
			root = tk
		}
	}
	tests := []struct {
		bundleID string
		counts   bool
	}{
		{"com.acme.tools", false},
		{"com.acme", false},
		{"org.example.tools", true},
		{"com.acmex.tools", true},
	}
	for _, tt := range tests {
		if got := bundle.KeyCoversManifest(root, &bundle.Manifest{BundleID: tt.bundleID}); got != tt.counts {
			t.Errorf("%s: root key counts = %v, want %v", tt.bundleID, got, tt.counts)
		}
	}
	if err := bundle.VerifyDIDFor(p, []bundle.TrustedKey{root}, "dids/tools.json", "did:web:tools.acme.com"); err == nil {
		t.Error("the root key vouches alone for a did:web of com.acme, where it was revoked")
	}
	if err := bundle.VerifyDIDFor(p, []bundle.TrustedKey{root}, "dids/tools.json", "did:web:tools.example.org"); err != nil {
		t.Errorf("the root key does not vouch for a did:web of org.example: %v", err)
	}
	if bundle.KeyCoversScope(root.Scopes, "*") && len(root.Except) == 0 {
		t.Fatalf("the policy does not carry the revocation of root for com.acme: %+v", root)
	}
	// A statement about * reaches com.acme: root cannot sign it alone.
	if _, err := s.ApplyRevocation(revocation(t, "*", []string{didOfPriv(testKeyN(92))}, nil, k)); err == nil {
		t.Fatal("a key revoked for com.acme signed a statement about * alone")
	}
}

// TestNarrowedKeyStillVouchesForBundleSpanningTwoScopes: when org.example
// revokes a key also trusted for com.acme (it stays trusted there), a
// bundle it signed alone whose id lies in com.acme and whose namespace lies
// in org.example no longer has a signer trusted for all its names: it must
// fail closed, though it is not wholly under the statement's scope.
func TestNarrowedKeyStillVouchesForBundleSpanningTwoScopes(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	k := testKeyN(81)
	if err := s.TrustAdd("k", pub(k), []string{"com.acme", "org.example"}); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.BundleID = "com.acme.translate" }, k))
	res, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(k)}, nil, sampleKey(t, "example-publisher")))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NarrowedTrust) != 1 || len(res.FailedClosed) != 1 || res.FailedClosed[0] != "com.acme.translate@1" {
		t.Fatalf("k lost its trust for org.example, yet the bundle it alone vouched for (namespace org.example.translate) stays served: %+v", res)
	}
	_, err = s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleRevoked)
}

// TestExpiredBundleOfferedByCatalog: the catalog (what CAP_QUERY offers)
// is cached per store generation; once a bundle expires by the clock, with
// no store change, it must stop offering the bundle's capabilities, as
// Resolve stops serving them (unless the store allows expired bundles).
func TestExpiredBundleOfferedByCatalog(t *testing.T) {
	for _, allow := range []bool{false, true} {
		clock := testNow
		s := newStore(t, func(o *Options) { o.Now = func() time.Time { return clock }; o.AllowExpired = allow })
		exp := testNow.Add(time.Hour)
		mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, sampleKey(t, "example-publisher")))
		c, err := s.Catalog()
		if err != nil || len(c.Names) == 0 {
			t.Fatalf("allow=%v: before expiry the catalog offers nothing: %v", allow, err)
		}
		clock = testNow.Add(2 * time.Hour)
		c, err = s.Catalog()
		if err != nil {
			t.Fatal(err)
		}
		if offered := len(c.Names) > 0; offered != allow {
			t.Fatalf("allow expired=%v: after expiry the catalog offers %v", allow, c.Names)
		}
	}
}

// TestRevokedKeyIsNotCountedTowardAThresholdWhereItWasRevoked: a key
// revoked for com.acme and trusted again for "*" counts for nothing under
// com.acme, so a trust policy setting com.acme's threshold to 2 with that
// key and one com.acme key is refused (only one key could sign there:
// nothing under com.acme could be imported); TrustList shows where the key
// was revoked.
func TestRevokedKeyIsNotCountedTowardAThresholdWhereItWasRevoked(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	k := testKeyN(93)
	if _, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(k)}, nil, sampleKey(t, "acme-publisher"))); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("root", pub(k), []string{"*"}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.TrustList()
	if err != nil {
		t.Fatal(err)
	}
	var root TrustKey
	for _, tk := range keys {
		if tk.Name == "root" {
			root = tk
		}
	}
	if strings.Join(root.Except, ",") != "com.acme" {
		t.Fatalf("trust list: root except %v, want [com.acme]", root.Except)
	}
	before := dumpBesidesAudit(t, s)
	_, err = s.ApplyTrustPolicy(&TrustPolicy{Format: TrustPolicyFormat, Keys: []TrustPolicyKey{
		{Name: "acme", Key: didOfPriv(sampleKey(t, "acme-publisher")), Scopes: []string{"com.acme"}},
		{Name: "root", Key: didOfPriv(k), Scopes: []string{"*"}},
	}, Thresholds: map[string]uint64{"com.acme": 2}})
	if !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), "com.acme") {
		t.Fatalf("a threshold of 2 for com.acme, with one key able to sign there: %v, want invalid_policy", err)
	}
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a refused policy changed the store")
	}
}

// TestRotationCannotCountAKeyWhereItWasRevoked: a rotation raising
// org.example's threshold to 2 is refused when the second key covering
// org.example is one revoked there and trusted again for "*": it counts
// for nothing under org.example, and the rotation would leave nothing
// under it importable.
func TestRotationCannotCountAKeyWhereItWasRevoked(t *testing.T) {
	s := rotationStore(t) // a (seed 41) for org.example
	a, k := testKeyN(41), testKeyN(94)
	if _, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(k)}, nil, a)); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("root", pub(k), []string{"*"}); err != nil {
		t.Fatal(err)
	}
	before := dumpBesidesAudit(t, s)
	_, err := s.ApplyRotation(rotation(t, nil, 1, 2, nil, nil, a))
	if !errors.Is(err, bundle.ErrInvalidStatement) {
		t.Fatalf("a threshold of 2 with one key able to sign under org.example: %v, want invalid_statement", err)
	}
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a refused rotation changed the store")
	}
}
