package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// Attacks on the trust statements found by a review: each test reproduces
// one hole and checks it stays closed.

// bankStore trusts key p (seed 51) for org.example with the default
// threshold 1, and keys b1..b3 (seeds 52-54) for org.example.bank with a
// threshold of 3.
func bankStore(t *testing.T) (s *Store, p ed25519.PrivateKey, bank []ed25519.PrivateKey) {
	t.Helper()
	s = rotationStoreWith(t, map[string]ed25519.PrivateKey{"p": testKeyN(51)}, "org.example")
	bank = []ed25519.PrivateKey{testKeyN(52), testKeyN(53), testKeyN(54)}
	for i, k := range bank {
		if err := s.TrustAdd([]string{"b1", "b2", "b3"}[i], pub(k), []string{"org.example.bank"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example.bank", 3); err != nil {
		t.Fatal(err)
	}
	return s, testKeyN(51), bank
}

// TestThresholdBypassByParentScopeKey: one key of org.example (threshold
// 1) cannot, alone, sign a statement that changes what org.example.bank
// (threshold 3) trusts: adding keys that would count for bank bundles,
// retiring or revoking bank keys, or revoking bank bundle versions all
// need the bank threshold of keys trusted for the statement's scope.
func TestThresholdBypassByParentScopeKey(t *testing.T) {
	s, p, bank := bankStore(t)
	x1, x2 := testKeyN(61), testKeyN(62)
	tests := []struct {
		name  string
		apply func([]byte) error
		data  []byte
	}{
		{"rotation adding two keys", rot(s), rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"x1": x1, "x2": x2}, nil, p)},
		{"rotation retiring a bank key", rot(s), rotation(t, nil, 1, 1, nil, []ed25519.PrivateKey{bank[0]}, p)},
		{"revocation of a bank key", rev(s), revocation(t, "org.example", []string{didOfPriv(bank[0])}, nil, p)},
		{"revocation of a key nobody trusts yet", rev(s), revocation(t, "org.example", []string{didOfPriv(x1)}, nil, p)},
	}
	for _, tt := range tests {
		before := dumpBesidesAudit(t, s)
		err := tt.apply(tt.data)
		if !errors.Is(err, bundle.ErrThreshold) {
			t.Fatalf("%s: got %v, want %s", tt.name, err, bundle.ErrThreshold)
		}
		if dumpBesidesAudit(t, s) != before {
			t.Fatalf("%s: a refused statement changed the store", tt.name)
		}
	}
	// A statement about the bank scope itself still needs its three keys
	// and no more.
	if _, err := s.ApplyRevocation(revocation(t, "org.example.bank", []string{didOfPriv(x1)}, nil, bank...)); err != nil {
		t.Fatal(err)
	}
}

func rot(s *Store) func([]byte) error {
	return func(b []byte) error { _, err := s.ApplyRotation(b); return err }
}

func rev(s *Store) func([]byte) error {
	return func(b []byte) error { _, err := s.ApplyRevocation(b); return err }
}

// rotationStoreWith opens a store trusting keys for scope.
func rotationStoreWith(t *testing.T, keys map[string]ed25519.PrivateKey, scope string) *Store {
	t.Helper()
	s := rotationStore(t)
	if err := s.TrustRemove("a"); err != nil {
		t.Fatal(err)
	}
	for n, k := range keys {
		if err := s.TrustAdd(n, pub(k), []string{scope}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestRevocationOfRetiredKeyReachesItsBundles: revoking a key after
// retiring it (as docs/FORMAT.md §22 advises) or after trust rm fails
// closed the installed bundles it signed, although no trust entry names
// the key any more; a statement of another scope reaches none of them.
func TestRevocationOfRetiredKeyReachesItsBundles(t *testing.T) {
	a, b := testKeyN(41), testKeyN(42)
	tests := []struct {
		name   string
		forget func(t *testing.T, s *Store)
	}{
		{"retired by a trust statement", func(t *testing.T, s *Store) {
			res, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"b": b}, []ed25519.PrivateKey{a}, a))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.StillInstalled) != 1 || res.StillInstalled[0] != "org.example.translate@1" {
				t.Fatalf("still installed %v", res.StillInstalled)
			}
		}},
		{"removed by trust rm", func(t *testing.T, s *Store) {
			if err := s.TrustAdd("b", pub(b), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			if err := s.TrustRemove("a"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := rotationStore(t)
			mustImport(t, s, cosigned(t, 1, a))
			tt.forget(t, s)
			if err := s.TrustAdd("acme", pub(sampleKey(t, "acme-publisher")), []string{"com.acme"}); err != nil {
				t.Fatal(err)
			}
			res, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(a)}, nil, sampleKey(t, "acme-publisher")))
			if err != nil || len(res.FailedClosed) != 0 {
				t.Fatalf("a statement of com.acme failed closed %v (%v)", res, err)
			}
			res, err = s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(a)}, nil, b))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.FailedClosed) != 1 || res.FailedClosed[0] != "org.example.translate@1" {
				t.Fatalf("failed closed %v", res.FailedClosed)
			}
			_, err = s.Resolve(descriptorRef(t, s))
			expect5002(t, err, ErrBundleRevoked)
		})
	}
}

// TestRevocationRemainingSignerCountedByKeyNotName: a new key trusted
// under the name of a removed signer does not count as a signer of the
// bundles the old key signed.
func TestRevocationRemainingSignerCountedByKeyNotName(t *testing.T) {
	a, b, c, a2 := testKeyN(11), testKeyN(12), testKeyN(13), testKeyN(15)
	s := rotationStoreWith(t, map[string]ed25519.PrivateKey{"a": a, "b": b, "c": c}, "org.example")
	if err := s.TrustSetThreshold("org.example", 2); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosigned(t, 1, a, b, c))
	if err := s.TrustRemove("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("a", pub(a2), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	// b revoked: of the signers a, b, c only c is still trusted, one of two.
	res, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(b)}, nil, a2, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FailedClosed) != 1 {
		t.Fatalf("failed closed %v: the new key named a was counted as a signer", res.FailedClosed)
	}
	_, err = s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleRevoked)
}

// TestPreRevocationByAnotherScopeCannotBlockTrust: a revocation of a key
// the store does not trust, signed by the keys of com.acme, blocks that
// key only for com.acme and the scopes under it: trust add and rotation
// for org.example, and trust add for broader scopes, still accept it.
func TestPreRevocationByAnotherScopeCannotBlockTrust(t *testing.T) {
	s := newStore(t)
	acme, example := sampleKey(t, "acme-publisher"), sampleKey(t, "example-publisher")
	k := testKeyN(21)
	if _, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(k)}, nil, acme)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scope string
		want  amp.ErrName // "" for accepted
	}{
		{"com.acme.tools", ErrKeyRevoked},
		{"com.acme", ErrKeyRevoked},
		{"*", ""},   // broader: allowed, but it counts nowhere under com.acme (TestRevokedKeyTrustedBroaderCountsNowhereItWasRevoked)
		{"com", ""}, // likewise
		{"org.example", ""},
	}
	for _, tt := range tests {
		err := s.TrustAdd("k", pub(k), []string{tt.scope})
		if tt.want != "" {
			if !errors.Is(err, tt.want) {
				t.Fatalf("%s: got %v, want %s", tt.scope, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.scope, err)
		}
		if err := s.TrustRemove("k"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"k": k}, nil, example)); err != nil {
		t.Fatalf("rotation adding the key for org.example: %v", err)
	}
}

// expiringStore trusts the example publisher (org.example), the acme
// publisher (com.acme) and key e2 (seed 71, org.example), with a threshold
// of 2 for org.example.translate, and holds translate version 1 co-signed
// by the example publisher and e2, expiring a day after testNow.
func expiringStore(t *testing.T, clock *time.Time) (s *Store, example, e2 ed25519.PrivateKey) {
	t.Helper()
	s = newStore(t, func(o *Options) { o.Now = func() time.Time { return *clock } })
	example, e2 = sampleKey(t, "example-publisher"), testKeyN(71)
	if err := s.TrustAdd("e2", pub(e2), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustSetThreshold("org.example.translate", 2); err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(24 * time.Hour)
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, example, e2))
	return s, example, e2
}

// cosignedDraft builds the translate sample at version, edited, signed by
// keys.
func cosignedDraft(t *testing.T, version uint64, edit func(*bundle.Draft), keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "translate"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(keys[0])})
	if err != nil {
		t.Fatal(err)
	}
	d.Version = version
	if edit != nil {
		edit(d)
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, keys, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTimeFloorPushedByKeyOfAnotherScope: a signed time far in the future,
// accepted from keys that could not sign a bundle (another scope's key, or
// fewer keys than its threshold), does not move the time its expiry is
// judged by: it neither expires it nor blocks importing its next version.
// A time signed by enough keys trusted for it still does, whatever the
// local clock says.
func TestTimeFloorPushedByKeyOfAnotherScope(t *testing.T) {
	far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		push func(t *testing.T, s *Store, example, e2 ed25519.PrivateKey)
	}{
		{"heartbeat by a key of com.acme", func(t *testing.T, s *Store, _, _ ed25519.PrivateKey) {
			if _, err := s.ApplyHeartbeat(heartbeat(t, "com.acme.tools", 1, far, sampleKey(t, "acme-publisher"))); err != nil {
				t.Fatal(err)
			}
		}},
		{"heartbeat of another line by one key of a two-key bundle", func(t *testing.T, s *Store, example, _ ed25519.PrivateKey) {
			if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.other", 1, far, example)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := testNow
			s, example, e2 := expiringStore(t, &clock)
			tt.push(t, s, example, e2)
			if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
				t.Fatalf("a time the bundle's keys did not sign expired it: %v", err)
			}
			exp := testNow.Add(48 * time.Hour)
			mustImport(t, s, cosignedDraft(t, 2, func(d *bundle.Draft) { d.ExpiresAt = &exp }, example, e2))
			ref := descriptorRef(t, s)
			if _, err := s.Resolve(ref); err != nil {
				t.Fatal(err)
			}
			// Both keys vouch for a time after the expiry: with the clock
			// set back, the bundle stays expired.
			if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 2, testNow.Add(72*time.Hour), example, e2)); err != nil {
				t.Fatal(err)
			}
			clock = time.Unix(0, 0)
			_, err := s.Resolve(ref)
			expect5002(t, err, ErrBundleExpired)
		})
	}
}

// TestHeartbeatThresholdBypassByNamespace: a heartbeat of a line counts
// its signers as a bundle of that line would: over the bundle id and every
// capability namespace of the installed bundle, so one key cannot pin a
// line (org.example.tools) whose namespace (org.example.translate)
// needs two.
func TestHeartbeatThresholdBypassByNamespace(t *testing.T) {
	s := newStore(t)
	example, e2 := sampleKey(t, "example-publisher"), testKeyN(71)
	if err := s.TrustAdd("e2", pub(e2), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustSetThreshold("org.example.translate", 2); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.BundleID = "org.example.tools" }, example, e2))
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	ref := descriptorRef(t, s)
	before := dumpBesidesAudit(t, s)
	_, err := s.ApplyHeartbeat(heartbeat(t, "org.example.tools", 9, testNow, example))
	expectName(t, err, bundle.ErrThreshold)
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a refused heartbeat changed the store")
	}
	if _, err := s.Resolve(ref); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.tools", 9, testNow, example, e2)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(ref)
	expect5002(t, err, ErrBundleStale)
}

// TestHeartbeatPinnedAtMaxVersion: a heartbeat claiming version 2^64-1
// (or any jump beyond bundle.MaxHeartbeatJump over what the store knows of
// the line) is refused, so it cannot pin the line stale for ever; a pin
// within the cap is undone by the operator's audited reset.
func TestHeartbeatPinnedAtMaxVersion(t *testing.T) {
	clock := testNow
	s, example, e2 := expiringStore(t, &clock)
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint64{^uint64(0), 1 + bundle.MaxHeartbeatJump + 1} {
		_, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", v, testNow, example, e2))
		expectName(t, err, ErrHeartbeatTooFar)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 1+bundle.MaxHeartbeatJump, testNow, example, e2)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleStale)
	if _, err := s.ResetHeartbeat("org.example.other"); !errors.Is(err, ErrNoHeartbeat) {
		t.Fatalf("reset of a line without a heartbeat: %v", err)
	}
	if v, err := s.ResetHeartbeat("org.example.translate"); err != nil || v != 1+bundle.MaxHeartbeatJump {
		t.Fatalf("reset: %d %v", v, err)
	}
	if e := lastAudit(t, s); e.Action != "heartbeat_reset" || e.BundleID != "org.example.translate" || e.Version != 1+bundle.MaxHeartbeatJump {
		t.Fatalf("audit %+v", e)
	}
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	// The line takes heartbeats again from where the store knows it is.
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 2, testNow, example, e2)); err != nil {
		t.Fatal(err)
	}
}

// TestHeartbeatOfRevokedSignerStopsCounting: a kept heartbeat counts only
// while its signers still vouch for the installed bundle: once its signer
// is revoked the line is no longer stale because of it.
func TestHeartbeatOfRevokedSignerStopsCounting(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	e2 := testKeyN(71)
	if err := s.TrustAdd("e2", pub(e2), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosigned(t, 1, k, e2))
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 5, testNow, k)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleStale)
	if _, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(k)}, nil, e2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
		t.Fatalf("a heartbeat by a revoked key still pins the line: %v", err)
	}
}
