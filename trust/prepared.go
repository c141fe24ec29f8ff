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
	l := pr.line(bundleID)
	return l.stale()
}

// StaleAndFloor is Stale(bundleID) and InstalledFloor(bundleID), the
// installed bundle's signed manifest decoded once for both: each call of
// the two decodes it, about ten times its bytes allocated, so a store
// that asked both of one bundle decoded it twice (docs/SPEC-DECISIONS.md
// TRUST-34).
func (pr *Prepared) StaleAndFloor(bundleID string) (string, int64) {
	l := pr.line(bundleID)
	return l.stale(), l.floor()
}

// installedLine is what Stale and InstalledFloor read of one installed
// bundle: its record, and its manifest with the did:keys of the keys
// covering it, its threshold and its floor, found at the first that
// needs them and kept for the other.
type installedLine struct {
	pr        *Prepared
	id        string
	in        Installed
	installed bool
	decoded   bool // m, covering and need are known (m nil: unreadable)
	m         *bundle.Manifest
	covering  []string
	need      int
	floored   bool // floorAt is known
	floorAt   int64
}

// line returns the installed line of bundleID, its manifest not decoded
// yet.
func (pr *Prepared) line(bundleID string) installedLine {
	in, installed := pr.s.Installed[bundleID]
	return installedLine{pr: pr, id: bundleID, in: in, installed: installed}
}

// manifest decodes the installed manifest, once; nil when it is not
// installed or does not decode.
func (l *installedLine) manifest() *bundle.Manifest {
	if !l.decoded {
		l.decoded = true
		if !l.installed {
			return nil
		}
		if _, m, ok := l.in.Manifest(); ok {
			l.m, l.covering, l.need = m, coveringDIDs(l.pr.p, l.pr.dids, coverer(m)), l.pr.p.RequiredFor(m)
		}
	}
	return l.m
}

// floor is InstalledFloor of the line, found once.
func (l *installedLine) floor() int64 {
	if !l.floored {
		l.floored = true
		if l.manifest() != nil {
			l.floorAt = max(floorOf(l.pr.s, l.covering, l.need), l.in.Floor)
		}
	}
	return l.floorAt
}

// stale is Stale of the line.
func (l *installedLine) stale() string {
	s := l.pr.s
	hb, kept := s.Heartbeats[l.id]
	pol, scope, ok := s.FreshnessFor(l.id)
	switch {
	case !ok, !kept && (pol.MaxAgeSeconds == 0 || !l.installed):
		return "" // no bound, or only a version bound and no heartbeat to judge it by
	case kept && hb.Unreadable:
		return "the stored heartbeat is unreadable"
	case !l.installed || l.in.Signed == nil:
		return "the installed bundle's record is unreadable"
	}
	if l.manifest() == nil {
		return "the installed bundle's manifest is unreadable"
	}
	if !kept {
		return l.staleManifest(nil, pol, scope)
	}
	return l.staleManifest(&hb, pol, scope)
}

// staleManifest is Stale of the line, its manifest decoded, its kept
// heartbeat hb (nil: none) and the bound pol of scope, against the
// prepared policy: the did:keys of the keys covering its manifest, found
// once, serve both Vouches and its floor.
func (l *installedLine) staleManifest(hb *Heartbeat, pol Freshness, scope string) string {
	m := l.m
	installed := l.in.Version
	counts := hb != nil && vouchesCovering(l.covering, l.need, hb, m, true)
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
	floor := l.floor()
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
	l := pr.line(bundleID)
	return l.floor()
}
