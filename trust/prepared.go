package trust

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// Prepared is a State with its policy built once (State.Policy) and the
// did:key of each of the policy's keys encoded once, to judge many
// installed bundles and kept heartbeats of that State: Stale and
// InstalledFloor build the policy, encoding every trusted key's did:key,
// at each call, and Vouches and Floor encode them again, so a store that
// judged each of its installed bundles or kept heartbeats paid bundles ×
// trusted keys encodings per listing (docs/SPEC-DECISIONS.md SCALE-24).
// Its answers are those of Stale, InstalledFloor and Vouches on its
// State.
//
// A Prepared reads its State at each call; the State's keys, thresholds
// and revoked keys must not change while it is used (they are read once,
// by Prepare). Its Installed and Heartbeats entries, key floors and
// freshness bounds are read at each call, so a caller may load one line
// at a time into it.
type Prepared struct {
	s    *State
	p    *bundle.Policy
	dids []string // the did:key of each key of p, in p's order
}

// Prepare builds the policy of s and the did:keys of its keys once: each
// read from State.KeyDIDs or encoded, once for both
// (docs/SPEC-DECISIONS.md TRUST-31).
func Prepare(s *State) *Prepared {
	p, dids := s.policy(true)
	return &Prepared{s: s, p: p, dids: dids}
}

// Stale is Stale(s, bundleID) of the Prepared's State s, judged against
// the policy Prepare built (Stale of a State is this, prepared for the
// one call).
func (pr *Prepared) Stale(bundleID string) string {
	s := pr.s
	hb, kept := s.Heartbeats[bundleID]
	pol, scope, ok := s.FreshnessFor(bundleID)
	in, installed := s.Installed[bundleID]
	switch {
	case !ok, !kept && (pol.MaxAgeSeconds == 0 || !installed):
		return "" // no bound, or only a version bound and no heartbeat to judge it by
	case kept && hb.Unreadable:
		return "the stored heartbeat is unreadable"
	case !installed || in.Signed == nil:
		return "the installed bundle's record is unreadable"
	}
	_, m, ok := in.Manifest()
	if !ok {
		return "the installed bundle's manifest is unreadable"
	}
	if !kept {
		return pr.staleManifest(nil, pol, scope, &in, m)
	}
	return pr.staleManifest(&hb, pol, scope, &in, m)
}

// staleManifest is Stale of the installed bundle in with manifest m, its
// kept heartbeat hb (nil: none) and the bound pol of scope, against the
// prepared policy: the did:keys of the keys covering m are found once,
// and serve both Vouches and Floor.
func (pr *Prepared) staleManifest(hb *Heartbeat, pol Freshness, scope string, in *Installed, m *bundle.Manifest) string {
	covering, need := coveringDIDs(pr.p, pr.dids, coverer(m)), pr.p.RequiredFor(m)
	installed := in.Version
	counts := hb != nil && vouchesCovering(covering, need, hb, m, true)
	if counts && pol.MaxVersions != NoVersionBound && hb.Version > installed && hb.Version-installed > pol.MaxVersions {
		return fmt.Sprintf("installed version %d is %d versions behind the publisher's heartbeat (version >= %d, signed %s); the freshness policy of %s allows %d",
			installed, hb.Version-installed, hb.Version, hb.CreatedAt, scopeName(scope), pol.MaxVersions)
	}
	if pol.MaxAgeSeconds == 0 {
		return ""
	}
	// Age: from the latest signed time at which the installed version was
	// vouched for as current (its own created_at, or the kept heartbeat's
	// when that names no newer version) to the newest time enough of its
	// own keys have signed (its floor).
	vouched := m.CreatedAt.Unix()
	if counts && hb.Version <= installed {
		if t, err := time.Parse(time.RFC3339, hb.CreatedAt); err == nil && t.Unix() > vouched {
			vouched = t.Unix()
		}
	}
	floor := max(floorOf(pr.s, covering, need), in.Floor)
	if age := floor - vouched; age > 0 && uint64(age) > pol.MaxAgeSeconds {
		return fmt.Sprintf("installed version %d was last vouched for as current %s, %s before the newest time its keys have signed (%s); the freshness policy of %s allows %s",
			installed, time.Unix(vouched, 0).UTC().Format(time.RFC3339), days(uint64(age)), time.Unix(floor, 0).UTC().Format(time.RFC3339),
			scopeName(scope), days(pol.MaxAgeSeconds))
	}
	return ""
}

// vouchesCovering is vouches for the keys covering m (their did:keys, in
// the policy's order) and m's threshold need: the keys among them that
// signed hb reach need or, with recorded, the threshold hb met when
// applied while it names m's line.
func vouchesCovering(covering []string, need int, hb *Heartbeat, m *bundle.Manifest, recorded bool) bool {
	if len(hb.Signers) == 0 {
		return true
	}
	n := 0
	for _, did := range covering {
		if slices.Contains(hb.Signers, did) {
			n++
		}
	}
	want := uint64(need)
	if recorded && hb.Threshold > 0 && hb.Threshold < want && bytes.Equal(hb.LineSHA256, LineDigest(m)) {
		want = hb.Threshold
	}
	return uint64(n) >= want
}

// Vouches is Vouches(s.Policy(), hb, m) of the Prepared's State s,
// judged against the policy Prepare built.
func (pr *Prepared) Vouches(hb *Heartbeat, m *bundle.Manifest) bool {
	if len(hb.Signers) == 0 {
		return true
	}
	return vouchesCovering(coveringDIDs(pr.p, pr.dids, coverer(m)), pr.p.RequiredFor(m), hb, m, true)
}

// InstalledFloor is InstalledFloor(s, bundleID) of the Prepared's State
// s, judged against the policy Prepare built.
func (pr *Prepared) InstalledFloor(bundleID string) int64 {
	in, ok := pr.s.Installed[bundleID]
	if !ok {
		return 0
	}
	_, m, ok := in.Manifest()
	if !ok {
		return 0
	}
	return max(floorOf(pr.s, coveringDIDs(pr.p, pr.dids, coverer(m)), pr.p.RequiredFor(m)), in.Floor)
}
