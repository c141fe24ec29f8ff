package resolver

import (
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A store written by the build before heartbeat thresholds and
// removed_key records were kept loosens nothing once opened by this one
// (docs/SPEC-DECISIONS.md TSTATE-4).

// TestHeartbeatKeptByThePreviousBuildStaysPinnedAcrossAThresholdRaise:
// a store written by the previous build keeps heartbeat records with
// their signers but no threshold or line digest. Opened by this build,
// such a record must not be judged against today's threshold after a
// raise, or the attack TRUST-12 closes (a raise — a stale-looking
// "hardening" policy file, trust threshold — unpins a frozen line) still
// works on every heartbeat kept before the upgrade: the first act that
// changes trust records, for a kept heartbeat without one, the threshold
// of its line before that act.
func TestHeartbeatKeptByThePreviousBuildStaysPinnedAcrossAThresholdRaise(t *testing.T) {
	a, b := testKeyN(75), testKeyN(76)
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	for i, k := range []ed25519.PrivateKey{a, b, testKeyN(77)} {
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
	// The record as the previous build wrote it: signers, no threshold,
	// no line digest.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		hb := bucket(tx, bHeartbeat)
		var r heartbeatRecord
		if err := decode(hb.Get([]byte("org.example.translate")), &r); err != nil {
			return err
		}
		if r.Threshold == 0 || len(r.Signers) != 2 {
			t.Fatalf("precondition: this build keeps the threshold and signers: %+v", r)
		}
		r.Threshold, r.LineSHA256 = 0, nil
		return hb.Put([]byte("org.example.translate"), encode(r))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, Options{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	ref := descriptorRef(t, s)
	_, err = s.Resolve(ref)
	expect5002(t, err, ErrBundleStale)
	if err := s.TrustSetThreshold("org.example", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ref); err == nil {
		t.Fatal("a threshold raise served again a frozen line whose heartbeat was kept by the previous build: " +
			"a record without the new threshold field is judged against today's threshold, the loosening TRUST-12 closes")
	}
}

// TestTrustRmBeforeTheUpgradeStillBindsAnOldPolicyFile: a store written
// by the previous build has no removed_key records, though its audit log
// has each trust_remove (did:key, name) and no trust_add of the key
// since. Opened by this build, an older policy file must not trust again
// a key removed before the upgrade (the TRUST-12 case: a compromised
// key): a policy file reads the removals from the audit log too.
// Simulated by deleting the record this build wrote.
func TestTrustRmBeforeTheUpgradeStillBindsAnOldPolicyFile(t *testing.T) {
	stolen := testKeyN(78)
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
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bMeta).Delete(removedKeyKey(didOfPriv(stolen))) // as the previous build left it
	}); err != nil {
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
	if _, err := s.ApplyTrustPolicy(old); err == nil {
		t.Fatal("an older policy file trusted again a key removed with trust rm before the upgrade: the audit log says it was removed, " +
			"and this build keeps no record of it")
	}
	// trust add, the explicit act, still trusts it again, and the file is then kept.
	if err := s.TrustAdd("stolen", pub(stolen), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyTrustPolicy(old); err != nil {
		t.Fatalf("after trust add, the file should be kept as is: %v", err)
	}
}
