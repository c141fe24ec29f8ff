package trust

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// HeartbeatEffects are the Effects of an applied heartbeat and what it
// did.
type HeartbeatEffects struct {
	*Effects
	BundleID  string
	Version   uint64
	CreatedAt string
	Signers   []string
	Installed uint64 // the installed version of the line; 0: none
	Stale     string // why the installed bundle now fails closed
	Unchanged bool
}

// ApplyHeartbeat verifies a heartbeat statement (docs/FORMAT.md §23) and
// keeps it as the newest heartbeat of its line. It must be signed as a
// bundle of the line would be (LineOf), and every signature it carries,
// trusted or not, must verify against the key its kid names
// (bad_signature). A heartbeat older than the one
// kept, while that one still vouches for the line (Vouches), is
// heartbeat_replayed; one more than bundle.MaxHeartbeatJump versions above
// what the store knows of the line is heartbeat_too_far. It is kept with
// the threshold its signers met and the digest of the line's names
// (LineDigest), which Vouches reads. Its created_at
// raises the time floor of each key that counted (RaiseFloors). The same
// heartbeat again is Unchanged (its bytes are kept when they were not).
// It reads Keys, Thresholds, RevokedKeys, Freshness, the floors, and the
// line's Highwater, Heartbeats, HeartbeatKept and Installed entries.
func ApplyHeartbeat(st *State, data []byte, now time.Time) (*State, *HeartbeatEffects, error) {
	hb, obj, err := bundle.ParseHeartbeat(data)
	if err != nil {
		return nil, nil, err
	}
	created, _ := hb.Created()
	policy, err := st.VerifyingPolicy()
	if err != nil {
		return nil, nil, err
	}
	line, err := st.LineOf(hb.BundleID)
	if err != nil {
		return nil, nil, err
	}
	signers, err := bundle.VerifyFor(obj, policy, line)
	if err != nil {
		return nil, nil, err
	}
	// Every other signature must verify too, against the key its kid
	// names, as a statement's must (bundle.VerifyStatement): the store
	// keeps one file per line and its mirror relays it, so a copy carrying
	// a forged signature under the kid of a key another store trusts,
	// applied first, would be the file relayed and refused there
	// (docs/SPEC-DECISIONS.md TRUST-19).
	if err := obj.VerifyAll(); err != nil {
		return nil, nil, err
	}
	res := &HeartbeatEffects{BundleID: hb.BundleID, Version: hb.Version, CreatedAt: hb.CreatedAt}
	var dids []string
	for _, k := range signers {
		res.Signers = append(res.Signers, k.Name)
		dids = append(dids, amp.DIDKey(k.Key))
	}
	known := st.Highwater[hb.BundleID]
	old, kept := st.Heartbeats[hb.BundleID]
	if kept && old.Unreadable {
		return nil, nil, fail(ErrStoreIO, "the stored heartbeat of %s is unreadable", hb.BundleID)
	}
	// A kept heartbeat that still vouches for the line as this one must
	// (its signers, trusted now, reach the line's threshold today) holds
	// back any heartbeat older in version or in created_at. One that
	// vouches only under the threshold it met when applied (a raise came
	// since, docs/SPEC-DECISIONS.md TRUST-12) still holds back any of a
	// lower version — a store never goes back, and a raise plus a replay
	// must not unpin a stale line — but not one signed before it, and it
	// does not move the jump bound. One that vouches under neither (keys
	// no longer trusted) never blocks one that does; it is replaced
	// (TRUST-9).
	if kept {
		covering, need := coveringDIDs(policy, nil, coverer(line)), policy.RequiredFor(line)
		today := vouchesCovering(covering, need, &old, line, false)
		if today || vouchesCovering(covering, need, &old, line, true) {
			if hb.Version < old.Version || (today && hb.CreatedAt < old.CreatedAt) {
				return nil, nil, fail(ErrHeartbeatOlder, "this heartbeat (%s at version >= %d, signed %s) is older than the one already applied (version >= %d, signed %s); a store never goes back",
					hb.BundleID, hb.Version, hb.CreatedAt, old.Version, old.CreatedAt)
			}
		}
		if today {
			res.Unchanged = hb.Version == old.Version && hb.CreatedAt == old.CreatedAt
			known = max(known, old.Version)
		}
	}
	if hb.Version > known && hb.Version-known > bundle.MaxHeartbeatJump {
		return nil, nil, fail(ErrHeartbeatTooFar, "this heartbeat says %s is at version >= %d, more than %d above version %d, the newest this store knows of the line; refused so that one statement cannot pin the line stale (docs/FORMAT.md §23)",
			hb.BundleID, hb.Version, bundle.MaxHeartbeatJump, known)
	}
	if in, ok := st.Installed[hb.BundleID]; ok {
		res.Installed = in.Version
	}
	sum := sha256.Sum256(data)
	next := st.Clone()
	event := Event{Action: "heartbeat", Verdict: verdictAccepted, BundleID: hb.BundleID, Version: hb.Version, Signers: res.Signers, FileSHA256: sum[:]}
	if res.Unchanged {
		// The same heartbeat again: keep its bytes when those kept are not
		// the record's file (a build that did not keep them, or kept an
		// older one's, applied it first) and these are, so that a mirror
		// serves it (a new generation: what a mirror serves changed).
		event.Verdict = verdictUnchanged
		res.Effects = &Effects{Audit: []Event{event}}
		if !bytes.Equal(st.HeartbeatKept[hb.BundleID], old.StatementSHA256) && bytes.Equal(sum[:], old.StatementSHA256) {
			next.HeartbeatKept[hb.BundleID] = sum[:]
			res.HeartbeatData, res.Changed = map[string][]byte{hb.BundleID: data}, true
		}
		return next, res, nil
	}
	next.Heartbeats[hb.BundleID] = Heartbeat{Version: hb.Version, CreatedAt: hb.CreatedAt, StatementSHA256: sum[:], At: formatTime(now), Signers: dids,
		Threshold: uint64(policy.RequiredFor(line)), LineSHA256: LineDigest(line), Charged: old.Charged}
	next.HeartbeatKept[hb.BundleID] = sum[:]
	next.raiseFloors(created, dids)
	if res.Installed != 0 {
		res.Stale = Stale(next, hb.BundleID)
	}
	res.Effects = finish(st, next, event)
	res.HeartbeatData = map[string][]byte{hb.BundleID: data}
	return next, res, nil
}

// LineOf is what a heartbeat of bundleID is judged against (docs/FORMAT.md
// §23, "Validity"): the manifest of the installed bundle of the line, or
// the bundle_id alone when none is installed.
func (s *State) LineOf(bundleID string) (*bundle.Manifest, error) {
	in, ok := s.Installed[bundleID]
	if !ok {
		return &bundle.Manifest{BundleID: bundleID}, nil
	}
	_, m, ok := in.Manifest()
	if !ok {
		return nil, fail(ErrStoreIO, "the installed manifest of %s is unreadable", bundleID)
	}
	return m, nil
}

// Vouches reports whether a kept heartbeat still speaks for the installed
// bundle m: the keys that counted for it that p still trusts for m's
// bundle id and every namespace reach m's threshold — or, when m has the
// names the heartbeat was judged for (LineDigest), the threshold it met
// then if that is smaller: raising a threshold narrows trust and so never
// unpins a stale line, as it never re-judges the installed bundle
// (docs/SPEC-DECISIONS.md TRUST-12). A heartbeat kept before its signers
// were recorded counts as it did then.
//
// Vouches decides whether the line is stale, and whether a kept heartbeat
// holds back one of a lower version (heartbeat_replayed); whether it holds
// back one signed earlier is judged against today's threshold alone
// (ApplyHeartbeat), so that one kept from before a raise never holds back
// a newer version that meets it.
func Vouches(p *bundle.Policy, hb *Heartbeat, m *bundle.Manifest) bool {
	return vouches(p, hb, m, true)
}

// vouches is Vouches; recorded also accepts the threshold hb met when
// applied.
func vouches(p *bundle.Policy, hb *Heartbeat, m *bundle.Manifest, recorded bool) bool {
	if len(hb.Signers) == 0 {
		return true
	}
	return vouchesCovering(coveringDIDs(p, nil, coverer(m)), p.RequiredFor(m), hb, m, recorded)
}

// pinHeartbeats records, on a change of the keys, thresholds or revoked
// keys, the threshold and line digest of each kept heartbeat of an
// installed line that has signers but neither (a record kept by a build
// before they were, docs/SPEC-DECISIONS.md TSTATE-4): the threshold of its
// line under prev, the policy in force before the change, which is the
// policy it was last judged under. A raise then never unpins a line
// such a heartbeat holds stale (Vouches), as for one kept since.
func (s *State) pinHeartbeats(prev *State) {
	var pp *bundle.Policy
	for id, hb := range s.Heartbeats {
		if hb.Unreadable || hb.Threshold != 0 || len(hb.Signers) == 0 {
			continue
		}
		in, ok := prev.Installed[id]
		if !ok {
			continue
		}
		_, m, ok := in.Manifest()
		if !ok {
			continue
		}
		if pp == nil {
			if !trustChanged(prev, s) {
				return
			}
			pp = prev.Policy()
		}
		hb = cloneHeartbeat(hb)
		hb.Threshold, hb.LineSHA256 = uint64(pp.RequiredFor(m)), LineDigest(m)
		s.Heartbeats[id] = hb
	}
}

// LineDigest is the SHA-256 of the names a bundle line with manifest m
// is judged by: its bundle id and capability namespaces, unique, sorted
// and joined by newlines (a line not installed, LineOf, has its bundle id
// alone).
func LineDigest(m *bundle.Manifest) []byte {
	names := append([]string{m.BundleID}, m.Namespaces()...)
	slices.Sort(names)
	sum := sha256.Sum256([]byte(strings.Join(slices.Compact(names), "\n")))
	return sum[:]
}

// FreshnessFor returns the staleness bound in force for bundleID: the one
// set for the longest scope covering it ("*" covers every id), and that
// scope; ok is false when none is set.
func (s *State) FreshnessFor(bundleID string) (f Freshness, scope string, ok bool) {
	for _, sc := range slices.Sorted(maps.Keys(s.Freshness)) {
		if !bundle.KeyCoversScope([]string{sc}, bundleID) {
			continue
		}
		if ok && !(scope == "*" || sc != "*" && len(sc) > len(scope)) {
			continue // a more specific scope already applies
		}
		f, scope, ok = s.Freshness[sc], sc, true
	}
	return f, scope, ok
}

// Stale says why the installed bundle bundleID is older than the
// freshness policy allows, or "" when it is not: the newest heartbeat of
// the line — while its signers still vouch for the installed bundle —
// says it is at a version more than max_versions above it, or the newest
// time enough of its own keys signed (Floor) is more than max_age after
// it was last vouched for as current (its own created_at, or the kept
// heartbeat's). The age rule needs no heartbeat of the line
// (docs/FORMAT.md §23): a line no heartbeat of which was let through is
// judged from its own created_at. The local clock plays no part. It
// reads Keys, Thresholds, RevokedKeys, Freshness, KeyFloors and the line's
// Heartbeats and Installed entries.
func Stale(s *State, bundleID string) string {
	return Prepare(s).Stale(bundleID)
}

func days(sec uint64) string {
	if sec%86400 == 0 {
		return fmt.Sprintf("%dd", sec/86400)
	}
	return (time.Duration(sec) * time.Second).String()
}

func scopeName(scope string) string {
	if scope == "*" {
		return "* (every bundle)"
	}
	return scope
}
