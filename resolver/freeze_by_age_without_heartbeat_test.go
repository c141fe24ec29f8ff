package resolver

import (
	"testing"
	"time"
)

// TestFreezeByAgeReachesALineThatNeverHadAHeartbeat: a courier who
// withholds every newer version of a line, and every heartbeat of it, while
// passing on what the same publisher signed for its other lines, must not
// keep the line served past the operator's max age: the age rule of
// docs/FORMAT.md §23 (F − V > max_age, V the installed version's own
// created_at when no heartbeat vouches for it) needs no heartbeat of the
// line. The store judged a line stale only once it kept a heartbeat of it,
// so a line the courier never let a heartbeat of through was served for
// ever, whatever its keys signed since.
func TestFreezeByAgeReachesALineThatNeverHadAHeartbeat(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil)) // org.example.translate, created testNow-1h
	ref := descriptorRef(t, s)
	day := 24 * time.Hour
	if err := s.SetFreshnessPolicy("org.example", nil, 30*day); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		at    time.Time // a heartbeat of another line of the same keys
		stale bool
	}{
		{"its keys signed a time 29 days later", testNow.Add(29 * day), false},
		{"its keys signed a time 41 days later", testNow.Add(41 * day), true},
	}
	for _, st := range steps {
		if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.other", 1, st.at, k)); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		_, err := s.Resolve(ref)
		bs, lerr := s.Bundles()
		if lerr != nil || len(bs) != 1 {
			t.Fatalf("%s: ls %v %v", st.name, bs, lerr)
		}
		if !st.stale {
			if err != nil || bs[0].Stale != "" || !offered(t, s) {
				t.Fatalf("%s: resolve %v, ls stale %q, offered %v", st.name, err, bs[0].Stale, offered(t, s))
			}
			continue
		}
		expect5002(t, err, ErrBundleStale)
		if bs[0].Stale == "" {
			t.Errorf("%s: ls does not list the line as stale", st.name)
		}
		if offered(t, s) {
			t.Errorf("%s: the catalog still offers the stale line's capability", st.name)
		}
	}
}
