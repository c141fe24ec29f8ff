package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"
)

// TestManifestTimePastYear9999IsNeverSigned: the attack is on the
// publisher's own pipeline. A created_at or expires_at whose year in UTC
// is past 9999 (a build run with SOURCE_DATE_EPOCH=253402300800, or a
// bundle.json expires_at of "9999-12-31T23:00:00-05:00", which is
// 10000-01-01T04:00:00Z) passed Validate, and Write signed a manifest
// whose time it wrote as "10000-01-01T…Z": RFC 3339 has four-digit years,
// so DecodeManifest refuses that manifest, and the bundle, signed and
// shipped across the air gap, was malformed_bundle at every store. Before:
// Write succeeds and Inspect refuses what it wrote. Now: Write refuses the
// draft as inconsistent_manifest before it signs anything, and every
// manifest it signs decodes (docs/SPEC-DECISIONS.md BUNDLE-24).
func TestManifestTimePastYear9999IsNeverSigned(t *testing.T) {
	last := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	for _, tc := range []struct {
		name             string
		created, expires time.Time
		refused          bool
	}{
		{"created_at in the year 10000 (SOURCE_DATE_EPOCH)", time.Unix(253402300800, 0), time.Time{}, true},
		{"expires_at given with an offset that lands in the year 10000", testNow, time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("", -5*3600)), true},
		{"expires_at far past the year 9999", testNow, time.Unix(1<<40, 0), true},
		{"expires_at at the last second of the year 9999", testNow, last, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := smallDraft(t)
			d.CreatedAt = tc.created
			if !tc.expires.IsZero() {
				d.ExpiresAt = &tc.expires
			}
			var buf bytes.Buffer
			_, err := Write(&buf, d, []ed25519.PrivateKey{testKey(1)}, WriteOptions{})
			if !tc.refused {
				if err != nil {
					t.Fatalf("a time the format can write was refused: %v", err)
				}
				if _, err := Inspect(bytes.NewReader(buf.Bytes()), 0); err != nil {
					t.Fatalf("what Write signed does not decode: %v", err)
				}
				return
			}
			if err == nil {
				_, ierr := Inspect(bytes.NewReader(buf.Bytes()), 0)
				t.Fatalf("Write signed a manifest no reader takes (the reader says: %v)", ierr)
			}
			if !errors.Is(err, ErrInconsistent) {
				t.Fatalf("got %v, want %s", err, ErrInconsistent)
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes written before the refusal", buf.Len())
			}
		})
	}
}
