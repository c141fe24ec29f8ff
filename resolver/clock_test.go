package resolver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestWrongClockNeverUnexpiresOrRollsBack: with the clock set back (a dead
// battery: 1970) an expired bundle stays expired, because the store has
// accepted a bundle signed as created after its expiry; an older version
// is refused whatever the clock says; with the clock set forward bundles
// expire early (fail closed) and nothing older is accepted either.
func TestWrongClockNeverUnexpiresOrRollsBack(t *testing.T) {
	clock := testNow
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return clock }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(24 * time.Hour)
	mustImport(t, s, variant(t, 2, func(d *bundle.Draft) { d.ExpiresAt = &exp }))
	ref := descriptorRef(t, s)
	if _, err := s.Resolve(ref); err != nil {
		t.Fatal(err)
	}
	// Time passes; a later release of another line, created after the
	// expiry, is imported: the store now knows it is at least then.
	clock = testNow.Add(48 * time.Hour)
	_, err = s.Resolve(ref)
	expect5002(t, err, ErrBundleExpired)
	other := variant(t, 1, func(d *bundle.Draft) {
		d.BundleID, d.CreatedAt = "org.example.other", testNow.Add(47*time.Hour)
		d.Capabilities, d.Aliases = nil, nil
		for i := range d.Artifacts {
			if d.Artifacts[i].MediaType == bundle.MediaTypeDID {
				d.Artifacts = append(d.Artifacts[:i], d.Artifacts[i+1:]...)
				break
			}
		}
	})
	mustImport(t, s, other)
	for _, wrong := range []time.Time{time.Unix(0, 0), testNow, exp.Add(-time.Second)} {
		clock = wrong
		_, err = s.Resolve(ref)
		expect5002(t, err, ErrBundleExpired)
		// Rollback: version 1 of the expired line, valid at the wrong
		// time, is still older than the highest ever imported.
		_, err = importBytes(t, s, variant(t, 1, nil), ImportOptions{})
		expectName(t, err, ErrRollback)
	}
	if !s.TimeFloor().Equal(testNow.Add(47 * time.Hour)) {
		t.Fatalf("time floor %v", s.TimeFloor())
	}
	// The floor survives a restart.
	path := s.Path()
	s.Close()
	clock = time.Unix(0, 0)
	s2, err := Open(path, Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	_, err = s2.Resolve(ref)
	expect5002(t, err, ErrBundleExpired)
	// Clock set forward: a bundle valid for a year fails closed at
	// import (expired), and the wrong clock is not recorded as the floor.
	clock = testNow.Add(10 * 365 * 24 * time.Hour)
	year := testNow.Add(365 * 24 * time.Hour)
	_, err = importBytes(t, s2, variant(t, 3, func(d *bundle.Draft) { d.ExpiresAt = &year }), ImportOptions{})
	expectName(t, err, bundle.ErrExpired)
	if !s2.TimeFloor().Equal(testNow.Add(47 * time.Hour)) {
		t.Fatalf("time floor %v after a wrong clock", s2.TimeFloor())
	}
}
