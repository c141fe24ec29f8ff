package trust

import (
	"sort"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// Time floors (docs/SPEC-DECISIONS.md TRUST-5, TRUST-8).
//
// Publishers sign created_at; once the store accepted a bundle or a
// heartbeat created at T, each key that counted for it has said "it is at
// least T". The state keeps, per key, the latest such time (KeyFloors). A
// bundle's expiry is judged by the later of the local clock and the
// bundle's floor: the latest time that keys still trusted for its bundle
// id and every namespace, as many as its threshold, have each signed (the
// threshold-th largest of their floors). So a clock set back cannot make
// an expired bundle valid again once enough of its own keys signed a
// later time, and a time signed by a key of another scope, or by fewer
// keys than the bundle's threshold, moves nothing of it.

// RaiseFloors returns s with the signed time created recorded for each
// did:key that counted for it (an accepted bundle or heartbeat). It reads
// and writes KeyFloors and TimeFloor.
func RaiseFloors(s *State, created time.Time, dids []string) *State {
	next := s.Clone()
	next.raiseFloors(created, dids)
	return next
}

func (s *State) raiseFloors(created time.Time, dids []string) {
	c := created.Unix()
	for _, did := range dids {
		if c > s.KeyFloors[did] {
			s.KeyFloors[did] = c
		}
	}
	s.TimeFloor = max(s.TimeFloor, c)
}

// Floor returns the floor a bundle with manifest m is judged by under
// policy p (s.Policy()): the threshold-th largest time floor of the keys
// of p trusted for its bundle id and every namespace (0 when fewer keys
// have one).
func Floor(s *State, p *bundle.Policy, m *bundle.Manifest) int64 {
	var fs []int64
	for _, k := range p.Keys {
		if bundle.KeyCoversManifest(k, m) {
			fs = append(fs, s.KeyFloors[amp.DIDKey(k.Key)])
		}
	}
	need := p.RequiredFor(m)
	if len(fs) < need {
		return 0
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i] > fs[j] })
	return fs[need-1]
}

// InstalledFloor returns the floor of the installed bundle bundleID (0
// when it is not in s or its manifest is unreadable: the local clock alone
// then).
func InstalledFloor(s *State, bundleID string) int64 {
	in, ok := s.Installed[bundleID]
	if !ok {
		return 0
	}
	_, m, ok := in.Manifest()
	if !ok {
		return 0
	}
	return Floor(s, s.Policy(), m)
}

// CheckFloorExpiry refuses a bundle being imported whose expires_at its
// own keys' floor has passed (bundle.ErrExpired, as the reader's clock
// check).
func CheckFloorExpiry(s *State, m *bundle.Manifest) error {
	if m.ExpiresAt == nil || s.TimeFloor < m.ExpiresAt.Unix() {
		return nil
	}
	if f := Floor(s, s.Policy(), m); f >= m.ExpiresAt.Unix() {
		return fail(bundle.ErrExpired, "bundle %s expired at %s: keys trusted for it have signed a later time (%s)", m.BundleID,
			m.ExpiresAt.UTC().Format(time.RFC3339), time.Unix(f, 0).UTC().Format(time.RFC3339))
	}
	return nil
}
