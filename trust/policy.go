package trust

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// PolicyFile is a parsed trust policy file (docs/FORMAT.md, "Trust policy
// files"): keys with their scopes in stored form, thresholds per scope.
type PolicyFile struct {
	Keys       []PolicyKey
	Thresholds map[string]uint64
}

// PolicyKey is one key of a trust policy file.
type PolicyKey struct {
	Name   string
	Key    string // Ed25519 did:key
	Scopes []string
}

// PolicyEffects are the Effects of an applied trust policy file and what
// it did, by name.
type PolicyEffects struct {
	*Effects
	Added       []string          // names of the keys it trusted
	Kept        []string          // names it lists that were already trusted as it says
	Thresholds  map[string]uint64 // thresholds it changed
	NotInPolicy []string          // trusted keys it does not list (left as they are)
	Unchanged   bool
}

// Trust policy file limits (docs/FORMAT.md, "Trust policy files"): the
// keys and thresholds a file lists, and the scopes of one key. They are
// kept here, where ApplyPolicy checks them (checkPolicyFile), and package
// resolver's parser uses them (CheckPolicyCounts): an embedder calling
// ApplyPolicy directly gets the same bounds (docs/SPEC-DECISIONS.md
// TRUST-30).
const (
	MaxPolicyKeys       = 1000
	MaxPolicyThresholds = 1000
	MaxPolicyKeyScopes  = 64
)

// CheckPolicyCounts refuses, limit_exceeded (bundle.ErrTooLarge), a trust
// policy file listing more than MaxPolicyKeys keys or MaxPolicyThresholds
// thresholds: each listed key is looked up with a pass over every trusted
// key, and each threshold with another (docs/SPEC-DECISIONS.md TRUST-30).
func CheckPolicyCounts(keys, thresholds int) error {
	if keys > MaxPolicyKeys || thresholds > MaxPolicyThresholds {
		return fail(bundle.ErrTooLarge, "a trust policy names at most %d keys and %d thresholds", MaxPolicyKeys, MaxPolicyThresholds)
	}
	return nil
}

func invalidPolicy(format string, args ...any) *amp.Error {
	return fail(ErrInvalidPolicy, "trust policy: "+format, args...)
}

// ApplyPolicy makes the state trust what a trust policy file says, or
// refuses it whole: each listed key is trusted under its name for exactly
// its scopes (kept when already so; a name or key trusted otherwise is
// trust_exists, a key revoked for an overlapping scope key_revoked, a key
// not trusted now that an applied trust statement retired for an
// overlapping scope or that trust rm removed invalid_policy), each
// listed threshold is set (never lowered: invalid_policy), and then every
// listed threshold must be reachable by the keys trusted for its scope.
// A file that is not well formed (checkPolicyFile) is invalid_policy. It
// reads Keys, Thresholds, RevokedKeys, RemovedKeys, Chains and, to keep
// the floors a raise would lower, Installed (pinFloors).
func ApplyPolicy(st *State, p *PolicyFile, now time.Time) (*State, *PolicyEffects, error) {
	if err := checkPolicyFile(p); err != nil {
		return nil, nil, err
	}
	res := &PolicyEffects{Added: []string{}, Kept: []string{}, Thresholds: map[string]uint64{}, NotInPolicy: []string{}}
	retired, err := st.retiredKeys()
	if err != nil {
		return nil, nil, err
	}
	next := st.Clone()
	var events []Event
	listed := map[string]bool{}
	for _, k := range p.Keys {
		listed[k.Name] = true
		added, err := next.policyKey(k, retired, now)
		if err != nil {
			return nil, nil, err
		}
		if !added {
			res.Kept = append(res.Kept, k.Name)
			continue
		}
		events = append(events, Event{Verdict: verdictAccepted, Action: "trust_add", TrustName: k.Name, Key: k.Key, Scopes: k.Scopes})
		res.Added = append(res.Added, k.Name)
	}
	scopes := slices.Sorted(maps.Keys(p.Thresholds))
	for _, sc := range scopes {
		n, cur := p.Thresholds[sc], uint64(1)
		if v, ok := next.Thresholds[sc]; ok {
			cur = v
		}
		if cur == n {
			continue
		}
		if n < cur {
			return nil, nil, invalidPolicy("the threshold of %s is %d in this store: a policy file never lowers a threshold (an older copy of the file?); trust threshold %s %d does, deliberately", sc, cur, sc, n)
		}
		events = append(events, next.setThreshold(sc, n))
		res.Thresholds[sc] = n
	}
	for _, sc := range scopes {
		if covering := next.covering(sc); uint64(covering) < p.Thresholds[sc] {
			return nil, nil, invalidPolicy("the threshold of %s is %d but only %d trusted key(s) cover it: nothing under it could be imported", sc, p.Thresholds[sc], covering)
		}
	}
	for _, k := range next.sortedKeys() {
		if !listed[k.Name] {
			res.NotInPolicy = append(res.NotInPolicy, k.Name)
		}
	}
	res.Unchanged = len(res.Added) == 0 && len(res.Thresholds) == 0
	res.Effects = finish(st, next, events...)
	res.Changed = !res.Unchanged
	return next, res, nil
}

// checkPolicyFile refuses a policy file that resolver.ParseTrustPolicy
// would not have returned, as AddKey checks its own input
// (docs/SPEC-DECISIONS.md TRUST-14): first the counts (CheckPolicyCounts,
// limit_exceeded), then (invalid_policy) every name valid (ValidName),
// every name and every key once, each key with 1 to MaxPolicyKeyScopes
// scopes, every scope in its stored form (CleanScope) and a key's sorted
// and unique, every threshold 1 to bundle.MaxSignatures. Else a caller
// other than the parser had the store keep a key trusted for nothing or
// for scopes no threshold or statement names the same way, or a threshold
// no bundle can reach (docs/SPEC-DECISIONS.md TRUST-29), or looked up
// any number of keys against every trusted key (TRUST-30).
func checkPolicyFile(p *PolicyFile) error {
	if err := CheckPolicyCounts(len(p.Keys), len(p.Thresholds)); err != nil {
		return err
	}
	names, dids := make(map[string]bool, len(p.Keys)), make(map[string]bool, len(p.Keys))
	for i, k := range p.Keys {
		if !ValidName(k.Name) {
			return invalidPolicy("key %d: name must be 1-%d characters of [A-Za-z0-9._-@]", i+1, MaxNameLen)
		}
		if names[k.Name] || dids[k.Key] {
			return invalidPolicy("key %s: each name and each key appears once", k.Name)
		}
		names[k.Name], dids[k.Key] = true, true
		if len(k.Scopes) == 0 || len(k.Scopes) > MaxPolicyKeyScopes {
			return invalidPolicy("key %s: 1 to %d scopes", k.Name, MaxPolicyKeyScopes)
		}
		for j, sc := range k.Scopes {
			if !storedScope(sc) || j > 0 && k.Scopes[j-1] >= sc {
				return invalidPolicy("key %s: scope %d must be * or a reverse-domain prefix such as org.example, in stored form, sorted and unique", k.Name, j+1)
			}
		}
	}
	for _, sc := range slices.Sorted(maps.Keys(p.Thresholds)) {
		n := p.Thresholds[sc]
		if !storedScope(sc) {
			return invalidPolicy("threshold scopes must be * or reverse-domain prefixes such as org.example, in stored form")
		}
		if n < 1 || n > bundle.MaxSignatures {
			return invalidPolicy("the threshold of %s must be 1 to %d", sc, bundle.MaxSignatures)
		}
	}
	return nil
}

// storedScope reports whether sc is a valid scope in its stored form
// (CleanScope returns it unchanged).
func storedScope(sc string) bool {
	c, err := CleanScope(sc)
	return err == nil && c == sc
}

// policyKey trusts one key of a policy file; added is false when it is
// already trusted as the file says.
func (s *State) policyKey(k PolicyKey, retired map[string][]string, now time.Time) (added bool, err error) {
	pub, ok := bundle.KeyFromKID(k.Key)
	if !ok {
		return false, invalidPolicy("key %s is not a did:key of an ed25519 public key", k.Name)
	}
	did := amp.DIDKey(pub) // the canonical spelling: what revocations and removals are kept by
	if by, ok := s.KeyRevokedFor(did, k.Scopes); ok {
		return false, fail(ErrKeyRevoked, "key %s (%s) is revoked for scope %s in this store; it cannot be trusted for a scope overlapping it", k.Name, did, by)
	}
	// One pass over the keys, nothing sorted (docs/SPEC-DECISIONS.md
	// TRUST-24): a file names up to MaxTrustPolicyKeys keys, and trust
	// statements may have added any number. Of the clashes, the one of
	// the greatest name is reported, as a pass in name order did.
	var same bool
	var clash, clashName string
	for _, r := range s.Keys {
		keyEq := string(r.Key) == string(pub)
		switch {
		case r.Name == k.Name && keyEq && slices.Equal(r.Scopes, k.Scopes):
			same = true
		case r.Name == k.Name && r.Name >= clashName:
			clash, clashName = "a trusted key named "+k.Name+" is another key or has other scopes ("+strings.Join(r.Scopes, ", ")+")", r.Name
		case r.Name != k.Name && keyEq && r.Name >= clashName:
			clash, clashName = "key "+did+" is already trusted as "+r.Name, r.Name
		}
	}
	if clash != "" {
		return false, fail(ErrTrustExists, "%s: trust rm it first, or change the policy", clash)
	}
	if same {
		return false, nil
	}
	if by, ok := retiredFor(retired[KeyID(did)], k.Scopes); ok {
		return false, invalidPolicy("key %s (%s) was retired for scope %s by a trust statement this store applied: a policy file does not trust it again (an older copy of the file?); trust add it if that is intended", k.Name, did, by)
	}
	if was, ok := s.RemovedKeys[did]; ok {
		return false, invalidPolicy("key %s (%s) was removed from this store's trust (trust rm %s): a policy file does not trust it again (an older copy of the file?); trust add it if that is intended", k.Name, did, was)
	}
	s.holdRevocation(did)
	s.Keys[k.Name] = Key{Name: k.Name, Key: pub, Scopes: k.Scopes, AddedAt: formatTime(now)}
	return true, nil
}

// retiredKeys returns, per did:key, the scopes whose trust statements
// retired it and did not add it again later, read from the statements of
// each scope's chain (in sequence order).
func (s *State) retiredKeys() (map[string][]string, error) {
	out := map[string][]string{}
	for _, scope := range slices.Sorted(maps.Keys(s.Chains)) {
		m := map[string]bool{}
		for _, e := range s.Chains[scope] {
			rot, _, err := bundle.ParseRotation(e.Data)
			if err != nil {
				return nil, fail(ErrStoreIO, "trust statement %d of scope %s kept by this store is unreadable", e.Seq, scope).WithCause(err)
			}
			for _, did := range rot.Retire {
				m[KeyID(did)] = true
			}
			for _, a := range rot.Add {
				delete(m, KeyID(a.Key))
			}
		}
		for did := range m {
			out[did] = append(out[did], scope)
		}
	}
	return out, nil
}

// retiredFor returns a scope of retiredIn overlapping one of scopes.
func retiredFor(retiredIn, scopes []string) (string, bool) {
	slices.Sort(retiredIn)
	for _, rs := range retiredIn {
		for _, sc := range scopes {
			if bundle.ScopesOverlap(rs, sc) {
				return rs, true
			}
		}
	}
	return "", false
}
