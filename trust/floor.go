package trust

import (
	"slices"
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
//
// An act that narrows trust (a threshold raised, a key removed, revoked
// or retired) never lowers the floor of an installed bundle: the floor
// it had before is pinned with it (Installed.Floor, pinFloors;
// docs/SPEC-DECISIONS.md TRUST-12), with the keys whose signed times the
// pin rests on (Installed.FloorKeys), and its floor is never below that —
// except for the times only keys since dropped signed, of a bundle they
// did not sign: a pin lives only while one of its keys is still trusted
// for the bundle (or signed it), so dropping the compromised keys, in one
// act or one at a time, undoes the far-future time they alone signed.

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
	return floorOf(s, coveringDIDs(p, nil, coverer(m)), p.RequiredFor(m))
}

// floorOf is the need-th largest time floor of the did:keys covering
// (0 when fewer than need).
func floorOf(s *State, covering []string, need int) int64 {
	if len(covering) < need {
		return 0
	}
	fs := make([]int64, len(covering))
	for i, did := range covering {
		fs[i] = s.KeyFloors[did]
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i] > fs[j] })
	return fs[need-1]
}

// coverer returns whether a key may publish a bundle with manifest m
// (bundle.KeyCoversManifest: its scopes cover m's bundle id and every
// namespace), with m's names read once. Manifest.Namespaces parses every
// capability name (up to bundle.MaxCapabilities), and asking it once per
// trusted key made each trust change cost the installed bundles times
// the keys times their capabilities (docs/SPEC-DECISIONS.md TRUST-26).
func coverer(m *bundle.Manifest) func(bundle.TrustedKey) bool {
	names := append([]string{m.BundleID}, m.Namespaces()...)
	one := &bundle.Manifest{}
	return func(k bundle.TrustedKey) bool {
		for _, n := range names {
			one.BundleID = n // a manifest of one name, no namespace: does k cover n
			if !bundle.KeyCoversManifest(k, one) {
				return false
			}
		}
		return true
	}
}

// coveringDIDs returns the did:keys of the keys of p that covers accepts;
// dids, when not nil, are the did:keys of p's keys in its order
// (State.policy), found once per act, not once per key per installed
// bundle.
func coveringDIDs(p *bundle.Policy, dids []string, covers func(bundle.TrustedKey) bool) []string {
	var out []string
	for i, k := range p.Keys {
		if !covers(k) {
			continue
		}
		if dids != nil {
			out = append(out, dids[i])
		} else {
			out = append(out, amp.DIDKey(k.Key))
		}
	}
	return out
}

// InstalledFloor returns the floor of the installed bundle bundleID: its
// Floor under s's policy, never below the floor an act narrowing trust
// pinned for it (0 when it is not in s or its manifest is unreadable: the
// local clock alone then).
func InstalledFloor(s *State, bundleID string) int64 {
	return Prepare(s).InstalledFloor(bundleID)
}

// pinFloors keeps, for each installed bundle that prev and s both hold at
// one version, the floor it had in prev — capped at the latest time a key
// that may keep a pin for it signed (keptFloor) — when its floor in s is
// lower: a change of the keys, thresholds or revoked keys lowers a floor
// only by narrowing trust (a threshold raised; a key removed, revoked,
// retired or narrowed), and such an act never makes an expired bundle
// valid again under a clock set back. Each pin records the keys whose
// signed times it rests on (Installed.FloorKeys: those that may keep it
// and signed a time at least the pin); a pin made earlier lives on only
// while one of its keys may still keep it, so that a pin never outlives
// every key behind it — dropping, one act at a time, every key that
// signed a far-future time undoes it, whatever narrowing acts ran between
// (docs/SPEC-DECISIONS.md TRUST-12). Nothing is computed when none of the
// keys, thresholds or revoked keys changed, nor for bundles s does not
// hold (the caller loads every installed bundle for a change that can
// narrow trust).
func (s *State) pinFloors(prev *State) {
	if prev.TimeFloor == 0 || len(s.Installed) == 0 || !trustChanged(prev, s) {
		return
	}
	pp, pd := prev.policy(true)
	np, nd := s.policy(true)
	for id, in := range s.Installed {
		old, ok := prev.Installed[id]
		if !ok || old.Version != in.Version {
			continue
		}
		_, m, ok := in.Manifest()
		if !ok {
			continue
		}
		covers := coverer(m)
		pc, nc := coveringDIDs(pp, pd, covers), coveringDIDs(np, nd, covers)
		may := mayKeepPin(nc, &in)
		pin := min(floorOf(prev, pc, pp.RequiredFor(m)), keptFloor(prev, pc, may))
		if old.Floor > pin && pinAlive(prev, pc, &old, may) {
			pin = old.Floor
		}
		in.Floor, in.FloorKeys = 0, nil
		if pin > floorOf(s, nc, np.RequiredFor(m)) {
			in.Floor = pin
			for did := range may {
				if prev.KeyFloors[did] >= pin {
					in.FloorKeys = append(in.FloorKeys, did)
				}
			}
			slices.Sort(in.FloorKeys)
		}
		s.Installed[id] = in
	}
}

// pinAlive reports whether the pin old had in prev still rests on a key
// that may keep it (may): one of its FloorKeys — or, for a pin kept
// before they were recorded, a key of prev's policy trusted for the
// bundle (pc, its did:keys), or one of its signers, that signed a time
// at least the pin.
func pinAlive(prev *State, pc []string, old *Installed, may map[string]bool) bool {
	keys := old.FloorKeys
	if keys == nil {
		for did := range mayKeepPin(pc, old) {
			if prev.KeyFloors[did] >= old.Floor {
				keys = append(keys, did)
			}
		}
	}
	for _, did := range keys {
		if may[did] {
			return true
		}
	}
	return false
}

// mayKeepPin returns the did:keys that may keep a pin for the installed
// bundle in: a key the policy after the act trusts for its bundle id and
// every namespace (covering, their did:keys), or one that signed the
// bundle itself (Installed.Signers, or its signatures when the record
// keeps none).
func mayKeepPin(covering []string, in *Installed) map[string]bool {
	may := map[string]bool{}
	for _, did := range covering {
		may[did] = true
	}
	for _, did := range in.Signers {
		may[did] = true
	}
	if in.Signers == nil {
		if obj, err := bundle.DecodeObject(in.Signed, bundle.MediaTypeManifest); err == nil {
			for _, sg := range obj.Signatures {
				may[amp.BareDID(sg.KID)] = true
			}
		}
	}
	return may
}

// keptFloor returns the latest time signed by a key of prev's policy
// trusted for the bundle (pc, their did:keys) that may keep a pin for it
// (may, mayKeepPin). A new pin is the floor the bundle had, capped at
// it: a time that only keys the act drops (removed, revoked, retired,
// narrowed) signed, of a bundle they did not sign, goes with them —
// dropping a compromised key undoes the far-future time it alone signed
// — while one that a key still trusted signed too stays pinned, with
// that key (docs/SPEC-DECISIONS.md TRUST-12).
func keptFloor(prev *State, pc []string, may map[string]bool) int64 {
	var f int64
	for _, did := range pc {
		if may[did] {
			f = max(f, prev.KeyFloors[did])
		}
	}
	return f
}

// trustChanged reports whether the keys, thresholds or revoked keys of
// next differ from prev's: what a floor is judged by besides the floors
// themselves, which only rise.
func trustChanged(prev, next *State) bool {
	keys, goneKeys := diff(prev.Keys, next.Keys, sameKey)
	thresholds, goneThresholds := diff(prev.Thresholds, next.Thresholds, equal)
	revoked, _ := diff(prev.RevokedKeys, next.RevokedKeys, sameRevocation)
	return len(keys)+len(goneKeys)+len(thresholds)+len(goneThresholds)+len(revoked) > 0
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
