package trust

import (
	"crypto/ed25519"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// formatTime is the stored form of a time: RFC 3339 UTC, whole seconds.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// finish returns the effects of going from prev to next with events,
// changing the generation. It first pins the floors next would lower
// (pinFloors) and the threshold kept heartbeats met (pinHeartbeats):
// every change goes through here.
func finish(prev, next *State, events ...Event) *Effects {
	next.pinFloors(prev)
	next.pinHeartbeats(prev)
	e := Diff(prev, next)
	e.Audit, e.Changed = events, true
	return e
}

// AddKey trusts key under name for scopes and, when threshold > 0, sets
// the threshold of each of its scopes to it (ampbundle trust add): names
// are unique, a key is trusted under one name only, and a key revoked
// for a scope under one of scopes is refused (key_revoked); threshold is
// 0 (none) or 1 to bundle.MaxSignatures. A key of small order or not in
// canonical form (amp.CheckEd25519PublicKey), which anybody can sign as,
// is invalid_trust (docs/SPEC-DECISIONS.md TRUST-21). A key trust rm
// removed is trusted again (RemovedKeys: the explicit step a policy file
// is not).
// It reads Keys, Thresholds, RevokedKeys, RemovedKeys and, when it sets a
// threshold, Installed (pinFloors).
func AddKey(st *State, name string, key ed25519.PublicKey, scopes []string, threshold int, now time.Time) (*State, *Effects, error) {
	if threshold < 0 || threshold > bundle.MaxSignatures {
		return nil, nil, ThresholdRange()
	}
	if !ValidName(name) {
		return nil, nil, fail(ErrInvalidTrust, "trust name must be 1-%d characters of [A-Za-z0-9._-@]", MaxNameLen)
	}
	if len(key) != ed25519.PublicKeySize {
		return nil, nil, fail(ErrInvalidTrust, "trusted key must be an ed25519 public key")
	}
	if amp.CheckEd25519PublicKey(key) != nil {
		return nil, nil, errUnusableKey()
	}
	if len(scopes) == 0 {
		return nil, nil, fail(ErrInvalidTrust, "a trusted key needs at least one scope (a reverse-domain prefix, or * for everything)")
	}
	clean, err := CleanScopes(scopes)
	if err != nil {
		return nil, nil, err
	}
	did := amp.DIDKey(key)
	if by, ok := st.KeyRevokedFor(did, clean); ok {
		return nil, nil, fail(ErrKeyRevoked, "key %s is revoked for scope %s (a revocation statement this store applied); it cannot be trusted for a scope overlapping it", did, by)
	}
	if _, ok := st.Keys[name]; ok {
		return nil, nil, fail(ErrTrustExists, "a trusted key named %s exists; remove it first", name)
	}
	for _, k := range st.sortedKeys() {
		if k.Key.Equal(key) {
			return nil, nil, fail(ErrTrustExists, "this key is already trusted as %s", k.Name)
		}
	}
	next := st.Clone()
	next.holdRevocation(did)
	next.Keys[name] = Key{Name: name, Key: append(ed25519.PublicKey(nil), key...), Scopes: clean, AddedAt: formatTime(now)}
	delete(next.RemovedKeys, did)
	events := []Event{{Verdict: verdictAccepted, Action: "trust_add", TrustName: name, Key: did, Scopes: clean}}
	if threshold > 0 {
		for _, sc := range clean {
			events = append(events, next.setThreshold(sc, uint64(threshold)))
		}
	}
	return next, finish(st, next, events...), nil
}

// setThreshold sets the threshold of the stored scope sc to n (1 removes
// the setting) and returns its audit event.
func (s *State) setThreshold(sc string, n uint64) Event {
	if n == 1 {
		delete(s.Thresholds, sc)
	} else {
		s.Thresholds[sc] = n
	}
	return Event{Verdict: verdictAccepted, Action: "trust_threshold", Scopes: []string{sc}, Threshold: n}
}

// SetThreshold sets how many distinct trusted keys must sign what lies
// under scope (docs/FORMAT.md §5 step 4): 1 to bundle.MaxSignatures. It
// reads Thresholds and, to keep the floors a raise would lower,
// Installed (pinFloors).
func SetThreshold(st *State, scope string, n int) (*State, *Effects, error) {
	sc, err := CleanScope(scope)
	if err != nil {
		return nil, nil, err
	}
	if n < 1 || n > bundle.MaxSignatures {
		return nil, nil, ThresholdRange()
	}
	next := st.Clone()
	return next, finish(st, next, next.setThreshold(sc, uint64(n))), nil
}

// RemoveKey stops trusting the key named name and records it in
// RemovedKeys, so that a trust policy file does not trust it again (only
// trust add does). With failClosed, every installed bundle it signed that
// the keys still trusted no longer vouch for fails closed (ampbundle trust
// rm --fail-closed; failClosed below). It reads Keys, Thresholds,
// RevokedKeys, Installed (pinFloors; with failClosed, also the bundles it
// recounts) and the DID documents (Records) of the bundles it recounts.
func RemoveKey(st *State, name string, failClosed bool) (*State, *Effects, error) {
	k, ok := st.Keys[name]
	if !ok {
		return nil, nil, fail(ErrUnknownTrust, "no trusted key is named %s", name)
	}
	next := st.Clone()
	delete(next.Keys, name)
	next.RemovedKeys[k.DID()] = name
	events := []Event{{Verdict: verdictAccepted, Action: "trust_remove", TrustName: name, Key: k.DID(), Scopes: k.Scopes}}
	if failClosed {
		failed := next.failClosed(map[string]bool{k.DID(): true}, nil, nil, "", "its signer "+name+" is no longer trusted (trust rm --fail-closed)")
		if len(failed) > 0 {
			events = append(events, Event{Action: "fail_closed", Verdict: verdictAccepted, TrustName: name, RevokedBundles: failed})
		}
	}
	return next, finish(st, next, events...), nil
}

// SetFreshness sets the staleness bound of scope (docs/FORMAT.md §23). f
// bounds versions, age or both. It reads Freshness.
func SetFreshness(st *State, scope string, f Freshness) (*State, *Effects, error) {
	sc, err := CleanScope(scope)
	if err != nil {
		return nil, nil, err
	}
	next := st.Clone()
	next.Freshness[sc] = f
	return next, finish(st, next, Event{Action: "trust_freshness", Verdict: verdictAccepted,
		Scopes: []string{sc}, Threshold: f.MaxVersions, Version: f.MaxAgeSeconds}), nil
}

// ResetHeartbeat forgets the heartbeat kept for the line bundleID and
// returns its version (no_heartbeat when none is kept). A kept record
// that does not decode (Unreadable, which fails its line closed as stale
// until reset) is forgotten too: its version is 0, and the audit event
// carries no file hash. It reads Heartbeats.
func ResetHeartbeat(st *State, bundleID string) (*State, *Effects, uint64, error) {
	old, ok := st.Heartbeats[bundleID]
	if !ok {
		return nil, nil, 0, fail(ErrNoHeartbeat, "no heartbeat is kept for the line %s (ampbundle trust freshness lists the policy; ls shows what is stale)", bundleID)
	}
	next := st.Clone()
	delete(next.Heartbeats, bundleID)
	delete(next.HeartbeatKept, bundleID)
	return next, finish(st, next, Event{Action: "heartbeat_reset", Verdict: verdictAccepted,
		BundleID: bundleID, Version: old.Version, FileSHA256: old.StatementSHA256}), old.Version, nil
}
