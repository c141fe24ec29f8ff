package resolver

import (
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// TestTrustRmByAnOlderBuildAfterTheMarkerIsHonouredOnUpgrade:
// Attack: removed_keys_migrated was a plain "done" marker, and the builds
// before and after removed_key records shared one store layout: an
// operator who rolled the binary back (a bad release) ran trust rm of a
// stolen key with the older build, which writes a trust_remove audit
// entry and no removed_key record; forward again, the marker said the log
// was read, so an older copy of the site's policy file trusted the stolen
// key again (TSTATE-4 says it cannot).
// Defence (TSTATE-5): such a store is of schema version 2, and this build
// upgrades it at its first writable open by reading the whole log again;
// from version 3 on, a build that does not keep removed_key records
// refuses the store. The policy file is invalid_policy.
func TestTrustRmByAnOlderBuildAfterTheMarkerIsHonouredOnUpgrade(t *testing.T) {
	s := storeAt(t)
	stolen := testKeyN(91)
	did := amp.DIDKey(pub(stolen))
	if err := s.TrustAdd("stolen", pub(stolen), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	p, err := ParseTrustPolicy([]byte(`{"format":"ampbundle-trust-policy/1","keys":[{"name":"stolen","key":"` + did + `","scopes":["org.example"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// This build applies the site's policy file once: the marker is written.
	if _, err := s.ApplyTrustPolicy(p); err != nil {
		t.Fatal(err)
	}
	// Rolled back to a build of version 2 before removed_key records, the
	// operator runs trust rm stolen: the key leaves the trust bucket, the
	// audit log says so, no removed_key record is written.
	r, err := asV2(t, s, func(tx *bolt.Tx) error {
		if bucket(tx, bMeta).Get([]byte(kRemovedMigrated)) == nil {
			return fmt.Errorf("precondition: no marker")
		}
		if err := bucket(tx, bTrust).Delete([]byte("stolen")); err != nil {
			return err
		}
		return appendAudit(tx, testNow, AuditEntry{Action: "trust_remove", Verdict: verdictAccepted, TrustName: "stolen", Key: did, Scopes: []string{"org.example"}})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer checkClose(t, r)
	if err := r.VerifyAudit(); err != nil {
		t.Fatalf("precondition: the audit chain verifies: %v", err)
	}
	// Forward again: the same, older, policy file.
	if _, err := r.ApplyTrustPolicy(p); err == nil {
		t.Fatal("a key trust rm removed (audited by an older build after this build's marker) was trusted again by an older policy file")
	} else {
		expectName(t, err, ErrInvalidPolicy)
	}
}
