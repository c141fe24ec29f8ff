package resolver

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
)

// uncheckedStore is a store trusting a and b (seeds 11 and 12) for
// org.example, with the translate sample signed by both installed, and no
// store check at cleanup (the tests below write records that do not
// decode).
func uncheckedStore(t *testing.T) (s *Store, a, b ed25519.PrivateKey) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a, b = testKeyN(11), testKeyN(12)
	for _, k := range []struct {
		name string
		key  ed25519.PrivateKey
	}{{"a", a}, {"b", b}} {
		if err := s.TrustAdd(k.name, pub(k.key), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	mustImport(t, s, cosigned(t, 1, a, b))
	return s, a, b
}

// putRecord writes value under key in bucket b, bypassing every check.
func putRecord(t *testing.T, s *Store, b string, key, value []byte) {
	t.Helper()
	if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, b).Put(key, value) }); err != nil {
		t.Fatal(err)
	}
}

// TestMassVersionRevocationsSlowNoTrustDecision: a publisher trusted for
// one scope can sign revocations of thousands of its own versions; the
// store keeps a record of each. No trust decision of any scope (the
// policy, a trust change, an import, a heartbeat, the judgement of an
// installed bundle, a rotation, another revocation) may read those
// records beyond the versions it names: each decodes a bounded number of
// revoked records (the revoked keys, and the versions it names), not one
// per version ever revoked, and reads DID records only where it recounts
// an installed bundle.
func TestMassVersionRevocationsSlowNoTrustDecision(t *testing.T) {
	const versions = 3000
	s, a, b := uncheckedStore(t)
	rec := encode(revokedRecord{StatementSHA256: make([]byte, 32), At: "2026-11-22T12:00:00Z"})
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for i := range versions {
			if err := bucket(tx, bRevoked).Put(revokedBundleKey(fmt.Sprintf("org.example.mass%d", i%30), uint64(i+1)), rec); err != nil {
				return err
			}
		}
		return bucket(tx, bRevoked).Put(revokedKeyKey(didOfPriv(testKeyN(99))), encode(revokedRecord{At: "2026-11-22T12:00:00Z", Scopes: []string{"org.example"}}))
	}); err != nil {
		t.Fatal(err)
	}
	decoded := map[string]int{}
	countDecodes(s, func(b string) { decoded[b]++ })
	mass := func(v uint64) []bundle.BundleVersion {
		return []bundle.BundleVersion{{BundleID: "org.example.mass0", Version: v}}
	}
	for _, tt := range []struct {
		name     string
		op       func() error
		readDIDs bool // it recounts an installed bundle
	}{
		{"policy", func() error { _, err := s.policy(); return err }, false},
		{"trust add", func() error { return s.TrustAdd("c", pub(testKeyN(13)), []string{"org.example"}) }, false},
		{"import", func() error { _, err := importBytes(t, s, cosigned(t, 2, a, b), ImportOptions{}); return err }, false},
		{"heartbeat", func() error {
			_, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 3, testNow, a))
			return err
		}, false},
		{"freshness", func() error { return s.SetFreshness("org.example", 5) }, false},
		{"judgement", func() error {
			if _, err := s.Bundles(); err != nil {
				return err
			}
			_, err := s.Resolve(descriptorRef(t, s))
			return err
		}, false},
		{"revocation of a kept version", func() error {
			r, err := s.ApplyRevocation(revocation(t, "org.example", nil, mass(31), a))
			if err == nil && !r.Unchanged {
				return errors.New("a version the store keeps revoked was revoked again")
			}
			return err
		}, false},
		{"revocation of a new version", func() error {
			r, err := s.ApplyRevocation(revocation(t, "org.example", nil, mass(versions+30), a))
			if err == nil && (r.Unchanged || len(r.RevokedBundles) != 1) {
				return fmt.Errorf("a new revoked version was not recorded: %+v", r)
			}
			return err
		}, false},
		{"rotation", func() error {
			_, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"d": testKeyN(44)}, nil, a))
			return err
		}, false},
		{"trust rm --fail-closed", func() error { _, err := s.TrustRemoveFailClosed("b"); return err }, true},
	} {
		clear(decoded)
		if err := tt.op(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		// A few loads of the state per operation, each decoding the one
		// revoked key, plus the version a revocation names.
		if n := decoded[bRevoked]; n > 10 {
			t.Errorf("%s decoded %d revoked records with %d revoked versions kept: its cost grows with every version ever revoked", tt.name, n, versions)
		}
		if n := decoded[bDIDs]; n > 0 && !tt.readDIDs {
			t.Errorf("%s decoded %d DID records, though it recounts no installed bundle", tt.name, n)
		}
	}
	if versionRevoked := func() (ok bool) {
		_ = s.db.View(func(tx *bolt.Tx) error { ok = versionRevoked(tx, "org.example.mass0", versions+30); return nil })
		return ok
	}; !versionRevoked() {
		t.Fatal("the newly revoked version is not recorded")
	}
}

// TestUnreadableDIDRecordStopsNoRotation: one DID record that does not
// decode (the store cannot tell whose it is) does not stop a trust
// statement, which judges no bundle's DID documents; a recount that needs
// them fails the bundle closed rather than trusting it uncounted, where
// with every record readable the remaining signer keeps it served.
func TestUnreadableDIDRecordStopsNoRotation(t *testing.T) {
	for _, tt := range []struct {
		name       string
		corrupt    bool
		failClosed int
	}{
		{"every DID record readable", false, 0},
		{"one DID record unreadable", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, a, _ := uncheckedStore(t)
			if tt.corrupt {
				putRecord(t, s, bDIDs, []byte("did:web:zzz.example"), []byte{0xff})
			}
			if r, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"d": testKeyN(44)}, nil, a)); err != nil || len(r.Added) != 1 {
				t.Fatalf("rotation: %+v %v", r, err)
			}
			failed, err := s.TrustRemoveFailClosed("b")
			if err != nil || len(failed) != tt.failClosed {
				t.Fatalf("trust rm --fail-closed b: failed %v, %v; want %d failed closed", failed, err, tt.failClosed)
			}
		})
	}
}

// TestResetClearsAnUnreadableHeartbeat: a kept heartbeat record that does
// not decode fails its line closed as stale "until reset"; the reset
// forgets it (version 0, audited), after which the line is served again
// and takes heartbeats, and the store checks clean.
func TestResetClearsAnUnreadableHeartbeat(t *testing.T) {
	s, a, _ := uncheckedStore(t)
	if err := s.SetFreshness("org.example", 5); err != nil {
		t.Fatal(err)
	}
	putRecord(t, s, bHeartbeat, []byte("org.example.translate"), []byte{0xff})
	_, err := s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleStale)
	if v, err := s.ResetHeartbeat("org.example.translate"); err != nil || v != 0 {
		t.Fatalf("reset of an unreadable heartbeat: version %d, %v", v, err)
	}
	if e := lastAudit(t, s); e.Action != "heartbeat_reset" || e.BundleID != "org.example.translate" || e.Version != 0 {
		t.Fatalf("audit %+v", e)
	}
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	if _, err := s.ResetHeartbeat("org.example.translate"); !errors.Is(err, ErrNoHeartbeat) {
		t.Fatalf("second reset: %v", err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 2, testNow, a)); err != nil {
		t.Fatal(err)
	}
	if ps, err := s.Check(); err != nil || len(ps) > 0 {
		t.Fatalf("store check: %v %v", ps, err)
	}
}
