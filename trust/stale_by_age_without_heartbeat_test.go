package trust_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/trust"
)

// TestFreezeByAgeNeedsNoHeartbeatOfTheLine: the age rule of docs/FORMAT.md
// §23 judges an installed version from its own created_at when no
// heartbeat of its line is kept: once enough of its own keys signed a time
// more than max_age later (a bundle or heartbeat of another line), it is
// stale. Stale answered "" for every line without a kept heartbeat, so a
// courier withholding a line's releases and heartbeats froze it for ever.
func TestFreezeByAgeNeedsNoHeartbeatOfTheLine(t *testing.T) {
	k := sampleKey(t, "example-publisher")
	day := int64(24 * 60 * 60)
	in := translate(t)
	_, m, ok := in.Manifest()
	if !ok {
		t.Fatal("the sample's manifest does not decode")
	}
	for _, c := range []struct {
		name      string
		freshness *trust.Freshness
		signed    int64 // the key's floor, in days after the bundle's created_at
		stale     bool
	}{
		{"no freshness policy", nil, 41, false},
		{"a version bound only", &trust.Freshness{MaxVersions: 2}, 41, false},
		{"max age 30d, keys signed 29 days later", &trust.Freshness{MaxVersions: trust.NoVersionBound, MaxAgeSeconds: 30 * uint64(day)}, 29, false},
		{"max age 30d, keys signed 41 days later", &trust.Freshness{MaxVersions: trust.NoVersionBound, MaxAgeSeconds: 30 * uint64(day)}, 41, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := state(t, map[string][]string{"publisher": {"org.example"}}, map[string]ed25519.PrivateKey{"publisher": k})
			if c.freshness != nil {
				st.Freshness["org.example"] = *c.freshness
			}
			f := m.CreatedAt.Unix() + c.signed*day
			st.KeyFloors[did(k)], st.TimeFloor = f, f
			if why := trust.Stale(st, in.BundleID); (why != "") != c.stale {
				t.Fatalf("stale %q, want stale %v", why, c.stale)
			}
		})
	}
}
