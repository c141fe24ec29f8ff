package resolver

import (
	"crypto/ed25519"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// Threats through the store: an act that only narrows trust makes
// something less restrictive, and records a publisher may create without
// bound are loaded by every use (docs/SPEC-DECISIONS.md TRUST-12,
// TSTATE-1). The pure decisions are tested in trust/narrowing_test.go.

// manyKeyN is a distinct key for each n (testKeyN has 256).
func manyKeyN(n uint32) ed25519.PrivateKey {
	seed := make([]byte, 32)
	seed[0] = 0xa5
	binary.BigEndian.PutUint32(seed[1:], n)
	return ed25519.NewKeyFromSeed(seed)
}

// TestRevocationsOfKeysNobodyTrustsAreNeverLoaded: a revocation may name
// any did:key (FORMAT.md §21), up to 1,000 per statement and without
// limit across statements, so one publisher key of one scope (threshold
// 1) could grow what every State load decoded — the policy read of every
// import, every trust change — by 1,000 records per file. Only the
// revocations of trusted keys are loaded; the others are looked up by key
// when a change asks, so trusting one of them is still refused.
func TestRevocationsOfKeysNobodyTrustsAreNeverLoaded(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	example := sampleKey(t, "example-publisher")
	const perStatement, statements = 1000, 2
	for st := range statements {
		var dids []string
		for i := range perStatement {
			dids = append(dids, didOfPriv(manyKeyN(uint32(st*perStatement+i))))
		}
		if _, err := s.ApplyRevocation(revocation(t, "org.example", dids, nil, example)); err != nil {
			t.Fatal(err)
		}
	}
	decoded := map[string]int{}
	countDecodes(s, func(b string) { decoded[b]++ })
	if _, err := importBytes(t, s, sampleBytes(t, "geo"), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := decoded[bRevoked]; n > 10 {
		t.Fatalf("importing an unrelated com.acme bundle decoded %d revoked-key records: one org.example key made every import's cost grow "+
			"by %d records per revocation file naming keys nobody ever trusted", n, perStatement)
	}
	clear(decoded)
	err := s.TrustAdd("revoked", pub(manyKeyN(7)), []string{"org.example.tools"})
	expectName(t, err, trust.ErrKeyRevoked)
	if decoded[bRevoked] != 1 {
		t.Fatalf("trust add looked up %d revocations, want the one of its key", decoded[bRevoked])
	}
	// Trusted for a disjoint scope, it counts nowhere under org.example:
	// its revocation is held with the trusted keys from then on.
	if err := s.TrustAdd("elsewhere", pub(manyKeyN(7)), []string{"net.other", "org"}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.TrustList()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == "elsewhere" && (len(k.Except) != 1 || k.Except[0] != "org.example") {
			t.Fatalf("a key revoked for org.example, trusted for org, lost its exception: %+v", k)
		}
	}
}

// TestNegativeMaxAgeIsRefusedNotTurnedIntoNoBound: SetFreshnessPolicy
// converted maxAge with uint64(maxAge/time.Second), so a negative duration
// became 2^64-3600 seconds, a policy that reads as set (FreshnessPolicy
// lists it, audited as trust_freshness) and never makes anything stale.
// The CLI and admin socket bound their input; the store API, which both
// call and other Go programs use, refuses it too, and a bound under one
// second (which would read as none).
func TestNegativeMaxAgeIsRefusedNotTurnedIntoNoBound(t *testing.T) {
	s := newStore(t)
	for _, age := range []time.Duration{-time.Hour, -time.Nanosecond, 500 * time.Millisecond} {
		err := s.SetFreshnessPolicy("org.example", nil, age)
		if err == nil {
			fs, _ := s.FreshnessPolicy()
			t.Fatalf("max age %v was accepted as %+v: a freshness bound that can never fire", age, fs)
		}
		expectName(t, err, trust.ErrInvalidTrust)
	}
	if fs, err := s.FreshnessPolicy(); err != nil || len(fs) != 0 {
		t.Fatalf("a refused policy was kept: %+v %v", fs, err)
	}
}

// TestRevocationAfterRetirementReachesBundleSpanningTwoScopes is the
// store's view of trust's
// TestRevocationReachesARetiredKeysBundleSpanningTwoScopes: key k
// (com.acme and org.example) alone signs com.acme.translate, whose
// namespace is org.example.translate. org.example's chain retires k
// (§22: the bundle stays), then, as §22 advises, com.acme's owner and
// org.example's owner each revoke k: the first revocation fails the
// bundle closed.
func TestRevocationAfterRetirementReachesBundleSpanningTwoScopes(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	example, acme, k := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher"), testKeyN(83)
	if err := s.TrustAdd("k", pub(k), []string{"com.acme", "org.example"}); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.BundleID = "com.acme.translate" }, k))
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 1, nil, []ed25519.PrivateKey{k}, example)); err != nil {
		t.Fatal(err)
	}
	r1, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(k)}, nil, acme))
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.FailedClosed) != 1 {
		t.Fatalf("com.acme's revocation of k, retired by org.example, did not fail closed the bundle k alone signed: %+v", r1)
	}
	if _, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(k)}, nil, example)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleRevoked)
}

// TestThresholdRaiseKeepsAStaleLineStale: a heartbeat signed by both keys
// of a two-key line pins its installed bundle stale; raising the
// threshold to 3 (a third key trusted, then trust threshold) kept it
// stale, across a reopen of the store (the threshold the heartbeat met is
// kept with it), where it used to serve the frozen bundle again.
func TestThresholdRaiseKeepsAStaleLineStale(t *testing.T) {
	a, b := testKeyN(11), testKeyN(12)
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	for i, k := range []ed25519.PrivateKey{a, b, testKeyN(13)} {
		if err := s.TrustAdd([]string{"a", "b", "c"}[i], pub(k), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example", 2); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosigned(t, 1, a, b))
	if err := s.SetFreshness("*", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 5, testNow, a, b)); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustSetThreshold("org.example", 3); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, Options{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleStale)
}

// TestThresholdRaiseKeepsAnExpiredBundleExpired: both keys of a two-key
// line signed a time after its bundle's expiry; raising its threshold to
// 3 used to drop its floor to nothing, so that with the clock set back
// the expired bundle was served again. The floor it had is pinned with
// the installed version, across a reopen of the store.
func TestThresholdRaiseKeepsAnExpiredBundleExpired(t *testing.T) {
	clock := testNow
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return clock }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	example, e2 := sampleKey(t, "example-publisher"), testKeyN(71)
	for name, k := range map[string]ed25519.PrivateKey{"example": example, "e2": e2} {
		if err := s.TrustAdd(name, pub(k), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example.translate", 2); err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(24 * time.Hour)
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, example, e2))
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 1, testNow.Add(72*time.Hour), example, e2)); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustSetThreshold("org.example.translate", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustRemove("e2"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	clock = time.Unix(0, 0)
	if s, err = Open(path, Options{Now: func() time.Time { return clock }}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleExpired)
}

// TestStalePolicyFileCannotRetrustAKeyRemovedByTrustRm is the store's view
// of trust's test of the same name: the removal is kept across a reopen,
// and trust add lifts it.
func TestStalePolicyFileCannotRetrustAKeyRemovedByTrustRm(t *testing.T) {
	stolen := testKeyN(91)
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if err := s.TrustAdd("stolen", pub(stolen), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TrustRemoveFailClosed("stolen"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, Options{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	old, err := ParseTrustPolicy([]byte(`{"format":"ampbundle-trust-policy/1","keys":[{"name":"stolen","key":"` + didOfPriv(stolen) + `","scopes":["org.example"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gen := s.Generation()
	_, err = s.ApplyTrustPolicy(old)
	expectName(t, err, ErrInvalidPolicy)
	if s.Generation() != gen {
		t.Fatal("a refused policy file changed the store")
	}
	if err := s.TrustAdd("stolen", pub(stolen), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.ApplyTrustPolicy(old); err != nil || len(r.Kept) != 1 {
		t.Fatalf("after trust add, the file should be kept as is: %+v %v", r, err)
	}
}

// TestHeartbeatsOfLinesNeverInstalledAreCapped: a heartbeat of a line not
// installed is accepted on its bundle id alone, so one publisher key
// could have the store keep a heartbeat, with its file, for every name
// under its scope, each loaded by every judgement of the store. Beyond
// the cap (lowered here) a heartbeat of another such line is refused
// limit_exceeded and changes nothing; a newer heartbeat of a line already
// kept, and one of an installed line, are still applied, and a reset
// frees a place. The judgement of installed bundles no longer loads them.
func TestHeartbeatsOfLinesNeverInstalledAreCapped(t *testing.T) {
	s := newStore(t)
	lowerLimits(s, func(l *storeLimits) { l.heartbeats = 3 })
	example := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	for _, id := range []string{"org.example.l1", "org.example.l2", "org.example.l3"} {
		if _, err := s.ApplyHeartbeat(heartbeat(t, id, 1, testNow, example)); err != nil {
			t.Fatal(err)
		}
	}
	before := dumpBesidesAudit(t, s)
	_, err := s.ApplyHeartbeat(heartbeat(t, "org.example.l4", 1, testNow, example))
	expectName(t, err, bundle.ErrTooLarge)
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a refused heartbeat changed the store")
	}
	for _, data := range [][]byte{heartbeat(t, "org.example.l1", 2, testNow, example), heartbeat(t, "org.example.translate", 1, testNow, example)} {
		if _, err := s.ApplyHeartbeat(data); err != nil {
			t.Fatalf("a heartbeat the cap does not count was refused: %v", err)
		}
	}
	if _, err := s.ResetHeartbeat("org.example.l2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.l4", 1, testNow, example)); err != nil {
		t.Fatalf("after a reset freed a place: %v", err)
	}
	if hs, err := s.Heartbeats(); err != nil || len(hs) != 4 {
		t.Fatalf("a mirror should still list every kept heartbeat: %d %v", len(hs), err)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		st, err := s.loadState(tx, selJudged)
		if err != nil {
			return err
		}
		if len(st.Heartbeats) != 1 {
			t.Fatalf("judging the installed bundles loaded %d heartbeats, want the installed line's alone", len(st.Heartbeats))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
