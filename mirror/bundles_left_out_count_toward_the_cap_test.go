package mirror

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

// leftOutPastTheCap is a Source listing MaxIndexBundles bundles the mirror
// serves and, besides, extra ones it leaves out by its own rule (expired
// by its clock, whose store's clock is behind, or an expiry it cannot
// read); it exports nothing.
type leftOutPastTheCap struct {
	manyBundles
	extra resolver.Bundle
}

func (m leftOutPastTheCap) Bundles() ([]resolver.Bundle, error) {
	out, _ := manyBundles{n: MaxIndexBundles}.Bundles()
	for i := range 3 {
		b := m.extra
		b.BundleID = "org.example.left" + strconv.Itoa(i)
		out = append(out, b)
	}
	return out, nil
}

func (m leftOutPastTheCap) Catalog() (*resolver.Catalog, error) { return &resolver.Catalog{}, nil }

// TestBundlesTheMirrorLeavesOutCountTowardTheIndexCap: buildFrom
// counted toward MaxIndexBundles every bundle that does not fail closed
// in the store, and then left out of the index, by a second copy of the
// rule (servedKey held a third), those expired by the mirror's clock or
// with an expiry it cannot read. A store of 10,000 bundles served plus
// three such (an agent's admin socket whose clock is behind the
// mirror's, or a bundle expiring between the store's listing and the
// mirror's reading of its clock) was refused whole, misconfigured, and
// the previous snapshot stayed served: an index of 10,000 bundles,
// within the cap, never replaced it, revocations included. Should: one
// rule (servedAt) says which bundles a snapshot serves, and only those
// count toward the cap.
func TestBundlesTheMirrorLeavesOutCountTowardTheIndexCap(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		expires string
	}{
		{"expired by the mirror's clock", now.Add(-time.Minute).Format(time.RFC3339)},
		{"an expiry the mirror cannot read", "not a time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := leftOutPastTheCap{extra: resolver.Bundle{Version: 1, ExpiresAt: c.expires}}
			m, err := New(Options{Open: func() (Source, error) { return src, nil },
				SpoolDir: filepath.Join(t.TempDir(), "spool"), Now: func() time.Time { return now }})
			if err != nil {
				t.Fatalf("%d bundles served and 3 left out (%s): %v, want a snapshot", MaxIndexBundles, c.name, err)
			}
			if m.Generation() != 1 {
				t.Fatalf("generation %d served, want 1", m.Generation())
			}
		})
	}
}

// mustNil fails the test at once on err.
func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
