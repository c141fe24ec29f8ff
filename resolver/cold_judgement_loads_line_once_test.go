package resolver

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	bolt "go.etcd.io/bbolt"
)

// TestAColdJudgementOfStalenessAndExpiryLoadsTheBundleLineOnce
//
// Attack: a bundle with a kept heartbeat (or under a freshness policy)
// whose expiry the newest time any trusted key signed reaches has both
// its staleness and its floor judged. Anyone whose signature a trusted
// key carries raises that time, for a bundle of another scope too. Out
// of the catalog, artifact (resolving a schema or artifact) and
// failsClosedAsInstalled (an import of the installed release again)
// judged its staleness (judgedStale) and then its expiry (expiredAt),
// each loading the bundle's line, its whole record and signed manifest
// included, and decoding the manifest: twice per cold call, at every
// new store generation.
//
// Defence (docs/SPEC-DECISIONS.md TRUST-36): both judge through
// judge.staleExpired, which loads the line once for both. Each call,
// the generation's judgements forgotten, loads 1 line (before: 2), and
// answers as before: the bundle is served, and its copy is unchanged.
func TestAColdJudgementOfStalenessAndExpiryLoadsTheBundleLineOnce(t *testing.T) {
	s := newStore(t)
	exp := testNow.Add(24 * time.Hour)
	id := "org.example.line0000"
	mustImport(t, s, heavyLineBundle(t, 0, 10, exp))
	hb, err := bundle.SignHeartbeat(&bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: id, Version: 1,
		CreatedAt: testNow.Add(-47 * time.Hour).Format(time.RFC3339)}, []ed25519.PrivateKey{sampleKey(t, "example-publisher")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(hb); err != nil {
		t.Fatal(err)
	}
	// A key trusted for com.acme only signs a time past the bundle's
	// expiry: the store's newest signed time reaches it (its floor is
	// judged), the bundle's own floor does not (it is not expired).
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if _, err := s.raiseFloors(tx, exp.Add(time.Hour), []string{amp.DIDKey(pub(sampleKey(t, "acme-publisher")))}); err != nil {
			return err
		}
		if _, err := bumpGeneration(tx); err != nil {
			return err
		}
		s.loadFloor(tx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if s.floor.Load() < exp.Unix() {
		t.Fatal("the store's newest signed time does not reach the bundle's expiry")
	}
	tests := []struct {
		name string
		call func(tx *bolt.Tx) error
	}{
		{"artifact", func(tx *bolt.Tx) error {
			_, _, err := s.artifact(tx, id, "capabilities/"+id+".op/1.0.0/input.schema.json")
			return err
		}},
		{"failsClosedAsInstalled", func(tx *bolt.Tx) error {
			var r bundleRecord
			if err := decode(bucket(tx, bBundles).Get([]byte(id)), &r); err != nil {
				t.Fatal(err)
			}
			return s.failsClosedAsInstalled(tx, &r)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forgetJudgements(s)
			before := s.judged.lines.Load()
			if err := s.db.View(tc.call); err != nil {
				t.Fatalf("%s: %v; want the bundle served (neither stale nor expired by its floor)", tc.name, err)
			}
			if loaded := s.judged.lines.Load() - before; loaded != 1 {
				t.Fatalf("%s loaded the bundle's line %d times to judge its staleness and expiry; want 1", tc.name, loaded)
			}
		})
	}
}
