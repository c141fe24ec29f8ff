package resolver

import (
	"crypto/ed25519"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
)

// Pinned floors are no weapon: dropping a key undoes the far-future time
// it alone signed, and a floor pinned for a version refuses its
// re-import (docs/SPEC-DECISIONS.md TRUST-12).

// TestRevokingACompromisedKeyUndoesTheFarFutureTimeItAloneSigned: key x
// is trusted for org.example (threshold 1) and signed no installed
// bundle. Compromised, it signs one heartbeat of a line never installed
// with a created_at a century ahead: its key floor now expires every
// installed org.example bundle (TRUST-8's accepted risk while the key is
// trusted). The owner revokes x, or the operator removes it — the remedy
// TRUST-9/TRUST-12 keep for heartbeats ("a heartbeat is only as good as
// its signers"). The act that drops x must not pin x's century on every
// installed version (pinFloors), or the operator's whole namespace stays
// expired with no operator act that lifts it. A floor that only the
// revoked or removed key's own signed time raised is not pinned by its
// revocation/removal (pin only what keys still trusted, or the bundle's
// own signers, signed), and the bundles are served again.
func TestRevokingACompromisedKeyUndoesTheFarFutureTimeItAloneSigned(t *testing.T) {
	for _, drop := range []struct {
		name string
		do   func(t *testing.T, s *Store, x ed25519.PrivateKey)
	}{
		{"revoked by the scope's owner", func(t *testing.T, s *Store, x ed25519.PrivateKey) {
			if _, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(x)}, nil, sampleKey(t, "example-publisher"))); err != nil {
				t.Fatal(err)
			}
		}},
		{"trust rm", func(t *testing.T, s *Store, _ ed25519.PrivateKey) {
			if _, err := s.TrustRemoveFailClosed("x"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(drop.name, func(t *testing.T) {
			s := newStore(t) // example (org.example), acme (com.acme)
			x := testKeyN(72)
			if err := s.TrustAdd("x", pub(x), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			exp := testNow.Add(24 * time.Hour)
			mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, sampleKey(t, "example-publisher")))
			ref := descriptorRef(t, s)
			if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.never-installed", 1, testNow.Add(100*365*24*time.Hour), x)); err != nil {
				t.Fatal(err)
			}
			_, err := s.Resolve(ref)
			expect5002(t, err, ErrBundleExpired) // the accepted risk while x is trusted
			drop.do(t, s, x)
			if _, err := s.Resolve(ref); err != nil {
				t.Fatalf("after x was %s, the bundle it never signed (publisher's alone, expiry %s, clock %s) still fails: %v — "+
					"the century x alone signed is pinned on every installed version of the scope, and no operator act lifts it",
					drop.name, exp.Format(time.RFC3339), testNow.Format(time.RFC3339), err)
			}
		})
	}
}

// TestReimportAfterRemoveIsServedOrRefusedNotAcceptedAndExpired: a floor
// pinned for org.example.translate@1 (two officers signed a time after
// its expiry; one of them was then removed with trust rm: TRUST-12's own
// case, the file being signed by a third officer too) is kept in meta
// under bundle_floor\0<id> and outlives Store.Remove, as the high-water
// mark does. The operator removes the bundle and imports the same file
// again (--allow-downgrade): the import must not accept what the store
// then refuses — it reads the pin kept for that version and refuses it
// bundle_expired, nothing written. (Dropping the pin at Remove instead
// would let rm and re-import un-expire the version under a clock set
// back.)
func TestReimportAfterRemoveIsServedOrRefusedNotAcceptedAndExpired(t *testing.T) {
	s := newStore(t)
	file := installExpiredByAPinnedFloor(t, s)
	_, err := s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleExpired) // pinned, as TRUST-12 wants
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	var left []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		left = clone(bucket(tx, bMeta).Get(bundleFloorKey("org.example.translate")))
		return nil
	})
	_, importErr := importBytes(t, s, file, ImportOptions{AllowDowngrade: true})
	if importErr != nil {
		expectName(t, importErr, bundle.ErrExpired)
		return
	}
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
		t.Fatalf("the same version, removed and imported again, was accepted by the import (not expired under today's policy) "+
			"and is then refused by the store: %v (the pin %x outlived Remove)", err, left)
	}
}

// TestRemovingTwoCompromisedKeysOneAtATimeUndoesTheirStoredPin: the pin
// kept in the store's meta bucket records the keys whose signed times it
// rests on (TRUST-12). x and y (org.example needs 2) co-sign a heartbeat
// a century ahead of a line never installed: the installed bundle, which
// neither signed, is expired. trust rm x pins the century, since y, still
// trusted, signed it too; trust rm y must then undo it — the pin read
// back from the store rests on y alone — and serve the bundle again.
func TestRemovingTwoCompromisedKeysOneAtATimeUndoesTheirStoredPin(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	x, y, e2 := testKeyN(75), testKeyN(76), testKeyN(77)
	exp := testNow.Add(24 * time.Hour)
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, sampleKey(t, "example-publisher")))
	ref := descriptorRef(t, s)
	for name, k := range map[string]ed25519.PrivateKey{"x": x, "y": y, "e2": e2} {
		if err := s.TrustAdd(name, pub(k), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.never-installed", 1, testNow.Add(100*365*24*time.Hour), x, y)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(ref)
	expect5002(t, err, ErrBundleExpired) // the accepted risk while x and y are trusted
	if err := s.TrustRemove("x"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(ref)
	expect5002(t, err, ErrBundleExpired) // y, still trusted, signed the century too
	if err := s.TrustRemove("y"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ref); err != nil {
		t.Fatalf("x and y removed one after the other: the century they alone signed stays pinned in the store on a bundle "+
			"neither signed: %v", err)
	}
}
