package resolver

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// installExpiredByAPinnedFloor installs org.example.translate@1, signed by
// the example publisher and two officers under a threshold of 2, and pins
// its expiry (TRUST-12's own case): two of its signers sign a time past
// its expiry in a heartbeat, then one of them is removed with trust rm.
// It returns the installed file, which lookups then refuse
// bundle_expired.
func installExpiredByAPinnedFloor(t *testing.T, s *Store) []byte {
	t.Helper()
	example, e2, e3 := sampleKey(t, "example-publisher"), testKeyN(73), testKeyN(74)
	for name, k := range map[string]ed25519.PrivateKey{"e2": e2, "e3": e3} {
		if err := s.TrustAdd(name, pub(k), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example.translate", 2); err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(24 * time.Hour)
	file := cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, example, e2, e3)
	mustImport(t, s, file)
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 1, testNow.Add(72*time.Hour), example, e2)); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustRemove("e2"); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestSameReleaseCopyOverAnExpiredOrStaleInstallIsNotUnchanged
//
// Attack (an answer that lies): a copy of the installed release was
// answered `unchanged`, a success (exit 0), when the installed bundle
// failed closed as expired (a floor pinned for its version, TRUST-12) or
// stale (a heartbeat of its line names a version too far ahead,
// TRUST-9). The copy carries the same version, expiry and line, so it
// cannot make the release served: an operator re-importing the file to
// "fix" a 5002 was told nothing needed doing, and an import check told a
// sync the store would take it.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-8, amended): over such an install
// the copy is refused by the name of what keeps it from serving: expired
// (as an expired file's import is) or bundle_stale, by Import and
// CheckImport alike; once the line is fresh again the copy is unchanged.
func TestSameReleaseCopyOverAnExpiredOrStaleInstallIsNotUnchanged(t *testing.T) {
	t.Run("expired by a pinned floor", func(t *testing.T) {
		s := newStore(t)
		file := installExpiredByAPinnedFloor(t, s)
		_, err := s.Resolve(descriptorRef(t, s))
		expect5002(t, err, ErrBundleExpired)
		res, err := importBytes(t, s, file, ImportOptions{})
		if err == nil {
			t.Fatalf("a copy of the expired install: %+v, want it refused expired, not answered unchanged", res)
		}
		expectName(t, err, bundle.ErrExpired)
		_, err = s.CheckImport(bytes.NewReader(file))
		expectName(t, err, bundle.ErrExpired)
	})
	t.Run("stale", func(t *testing.T) {
		s := newStore(t)
		k := sampleKey(t, "example-publisher")
		file := variant(t, 1, nil)
		mustImport(t, s, file)
		if err := s.SetFreshness("*", 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 4, testNow, k)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Resolve(descriptorRef(t, s))
		expect5002(t, err, ErrBundleStale)
		res, err := importBytes(t, s, file, ImportOptions{})
		if err == nil {
			t.Fatalf("a copy of the stale install: %+v, want it refused bundle_stale, not answered unchanged", res)
		}
		expectName(t, err, ErrBundleStale)
		_, err = s.CheckImport(bytes.NewReader(file))
		expectName(t, err, ErrBundleStale)
		// Once the line is fresh again, the copy is unchanged.
		if err := s.SetFreshness("*", 5); err != nil {
			t.Fatal(err)
		}
		if res, err := importBytes(t, s, file, ImportOptions{}); err != nil || !res.Unchanged {
			t.Fatalf("a copy of the fresh install: %+v, %v; want unchanged", res, err)
		}
	})
}
