package resolver

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// The keys trust rm removed before removed_key records were kept are read
// from the audit log once (TSTATE-4).

// TestTrustRmAuditedByABuildBeforeVerdictsStillBindsAnOldPolicyFile:
// removedFromAudit (TSTATE-4) reads "every did:key whose last
// trust_remove has no trust_add after it", and skipped each entry whose
// verdict is not "accepted". Builds before 18c9cae (2026-11-25; the
// store layout, SchemaVersion 2, is the same since 2026-11-22) wrote
// trust_add and trust_remove entries with no verdict at all. A key such
// a build removed (a compromised key) has no removed_key record and no
// entry the migration reads, so an older copy of the site's policy file
// trusts it again — exactly what TSTATE-4 says cannot happen on upgrade.
// An entry of these two actions with no verdict now counts as accepted
// (the builds that wrote them audited only what took effect), and the
// file is invalid_policy.
func TestTrustRmAuditedByABuildBeforeVerdictsStillBindsAnOldPolicyFile(t *testing.T) {
	stolen := testKeyN(91)
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	did := amp.DIDKey(pub(stolen))
	// What a 2026-11-24 build left: trust add then trust rm, audited
	// without a verdict, the key gone from the trust bucket, no
	// removed_key record.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for _, action := range []string{"trust_add", "trust_remove"} {
			if err := appendAudit(tx, testNow, AuditEntry{Action: action, TrustName: "stolen", Key: did, Scopes: []string{"org.example"}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.VerifyAudit(); err != nil {
		t.Fatalf("precondition: the audit chain verifies: %v", err)
	}
	old, err := ParseTrustPolicy([]byte(`{"format":"ampbundle-trust-policy/1","keys":[{"name":"stolen","key":"` + did + `","scopes":["org.example"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyTrustPolicy(old); err == nil {
		t.Fatal("an older policy file trusted again a key trust rm removed under a build that audited no verdict: " +
			"removedFromAudit skips its trust_remove entry (verdict \"\" is not \"accepted\")")
	}
}

// TestPolicyFileCostDoesNotGrowWithTheAuditLog: TSTATE-4's migration
// (removedFromAudit) was not a migration: every trust policy file, on
// every store, decoded the whole audit log again, under the store's write
// lock (imports, heartbeats and statements wait). The log only grows, and
// peers grow it: every refused import, heartbeat or statement is audited
// (import_refused). Measured on a 2-core machine: 8.7 s per policy file
// at 1,000,000 entries, against ~3 ms for trust threshold on the same
// store. Here 200,000 entries (written directly, one encoding reused) and
// a file that changes nothing: it costs about what trust threshold costs
// (the removals are read once, by the first policy file that commits,
// written as removed_key records with a meta marker, and never again):
// three policy files read the log at most once in all (Store.auditRead,
// the times logged).
func TestPolicyFileCostDoesNotGrowWithTheAuditLog(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	entry := encode(AuditEntry{Action: "import_refused", Verdict: "bad_signature", FileSHA256: make([]byte, 32), Prev: make([]byte, 32),
		Source: "https://mirror.example/pub/org.example.x-1.ampb"})
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := bucket(tx, bAudit)
		b.FillPercent = 1
		for i := uint64(1_000_000); i < 1_200_000; i++ {
			if err := b.Put(u64(i), entry); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p, err := ParseTrustPolicy([]byte(`{"format":"ampbundle-trust-policy/1","keys":[{"name":"example","key":"` +
		amp.DIDKey(pub(sampleKey(t, "example-publisher"))) + `","scopes":["org.example"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// Three policy files, each after a trust threshold (the primitive):
	// the log may be read once, by the first act that commits the
	// migration, never by every policy file.
	read := s.auditRead.Load()
	base, took := time.Hour, time.Hour
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if err := s.TrustSetThreshold("org.example", 1); err != nil {
			t.Fatal(err)
		}
		base = min(base, time.Since(t0))
		t0 = time.Now()
		if _, err := s.ApplyTrustPolicy(p); err != nil {
			t.Fatal(err)
		}
		took = min(took, time.Since(t0))
	}
	read = s.auditRead.Load() - read
	t.Logf("policy file %v, trust threshold %v; audit entries read for removals: %d", took, base, read)
	if read > 200_100 {
		t.Fatalf("three policy files that change nothing read %d audit entries for removals on a store with 200,000: "+
			"removedFromAudit decodes the whole log at every policy file", read)
	}
}
