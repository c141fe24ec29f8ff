package resolver

import (
	"bytes"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/strictjson"
)

// TrustPolicyFormat is the format string of a trust policy file
// (docs/FORMAT.md, "Trust policy files").
const TrustPolicyFormat = "ampbundle-trust-policy/1"

// Trust policy file limits (docs/FORMAT.md, "Trust policy files").
const (
	MaxTrustPolicySize       = 1 << 20 // bytes
	MaxTrustPolicyKeys       = 1000
	MaxTrustPolicyThresholds = 1000
	MaxTrustPolicyKeyScopes  = 64
)

// ErrInvalidPolicy names a trust policy file that is not well formed, or
// that the store cannot apply as a whole.
const ErrInvalidPolicy amp.ErrName = "invalid_policy"

// TrustPolicy is a trust policy file: keys to trust with their scopes, and
// thresholds per scope.
type TrustPolicy struct {
	Format     string            `json:"format"`
	Keys       []TrustPolicyKey  `json:"keys"`
	Thresholds map[string]uint64 `json:"thresholds"`
}

// TrustPolicyKey is one key of a trust policy file.
type TrustPolicyKey struct {
	Name   string   `json:"name"`
	Key    string   `json:"key"` // Ed25519 did:key
	Scopes []string `json:"scopes"`
}

func invalidPolicy(format string, args ...any) *amp.Error {
	return fail(ErrInvalidPolicy, "trust policy: "+format, args...)
}

// ParseTrustPolicy reads a trust policy file (docs/FORMAT.md, "Trust
// policy files"): one JSON object with exactly the members format, keys
// and thresholds (no other, no duplicate), within the limits, every name,
// key, scope and threshold valid, names and keys unique. Scopes are
// returned in their stored form (no trailing dot, sorted, unique).
func ParseTrustPolicy(data []byte) (*TrustPolicy, error) {
	if len(data) > MaxTrustPolicySize {
		return nil, fail(bundle.ErrTooLarge, "a trust policy file is at most %d bytes", MaxTrustPolicySize)
	}
	var p TrustPolicy
	if err := strictjson.Decode(data, &p, 4); err != nil {
		return nil, invalidPolicy("%s", err.Error())
	}
	if p.Format != TrustPolicyFormat {
		return nil, invalidPolicy("format must be %q", TrustPolicyFormat)
	}
	if len(p.Keys) > MaxTrustPolicyKeys || len(p.Thresholds) > MaxTrustPolicyThresholds {
		return nil, fail(bundle.ErrTooLarge, "a trust policy names at most %d keys and %d thresholds", MaxTrustPolicyKeys, MaxTrustPolicyThresholds)
	}
	if len(p.Keys) == 0 && len(p.Thresholds) == 0 {
		return nil, invalidPolicy("it names no key and no threshold")
	}
	names, dids := map[string]bool{}, map[string]bool{}
	for i := range p.Keys {
		k := &p.Keys[i]
		if !validTrustName(k.Name) {
			return nil, invalidPolicy("key %d: name must be 1-%d characters of [A-Za-z0-9._-@]", i+1, maxTrustName)
		}
		if _, ok := bundle.KeyFromKID(k.Key); !ok || amp.BareDID(k.Key) != k.Key {
			return nil, invalidPolicy("key %s: key must be an ed25519 did:key", k.Name)
		}
		if names[k.Name] || dids[k.Key] {
			return nil, invalidPolicy("key %s: each name and each key appears once", k.Name)
		}
		names[k.Name], dids[k.Key] = true, true
		if len(k.Scopes) == 0 || len(k.Scopes) > MaxTrustPolicyKeyScopes {
			return nil, invalidPolicy("key %s: 1 to %d scopes", k.Name, MaxTrustPolicyKeyScopes)
		}
		for j, sc := range k.Scopes {
			c, err := cleanScope(sc)
			if err != nil {
				return nil, invalidPolicy("key %s: scope %d must be * or a reverse-domain prefix such as org.example", k.Name, j+1)
			}
			k.Scopes[j] = c
		}
		sort.Strings(k.Scopes)
		k.Scopes = dedup(k.Scopes)
	}
	clean := make(map[string]uint64, len(p.Thresholds))
	for sc, n := range p.Thresholds {
		c, err := cleanScope(sc)
		if err != nil {
			return nil, invalidPolicy("threshold scopes must be * or reverse-domain prefixes such as org.example")
		}
		if _, dup := clean[c]; dup {
			return nil, invalidPolicy("threshold scope %s appears twice", c)
		}
		if n < 1 || n > bundle.MaxSignatures {
			return nil, invalidPolicy("the threshold of %s must be 1 to %d", c, bundle.MaxSignatures)
		}
		clean[c] = n
	}
	p.Thresholds = clean
	return &p, nil
}

// PolicyResult describes an applied trust policy file.
type PolicyResult struct {
	Added      []string          `json:"added"`      // names of the keys it trusted
	Kept       []string          `json:"kept"`       // names it lists that were already trusted as it says
	Thresholds map[string]uint64 `json:"thresholds"` // thresholds it changed
	// NotInPolicy are trusted keys the file does not list: left as they
	// are (trust rm removes them).
	NotInPolicy []string `json:"not_in_policy"`
	Unchanged   bool     `json:"unchanged"`
	Generation  uint64   `json:"generation"`
}

// ApplyTrustPolicyFile parses the trust policy file data
// (ParseTrustPolicy) and applies it (ApplyTrustPolicy): what the admin
// socket takes, so that the agent parses the file itself.
func (s *Store) ApplyTrustPolicyFile(data []byte) (*PolicyResult, error) {
	p, err := ParseTrustPolicy(data)
	if err != nil {
		return nil, err
	}
	return s.ApplyTrustPolicy(p)
}

// ApplyTrustPolicy makes the store trust what a trust policy file says,
// in one transaction, or changes nothing: each listed key is trusted under
// its name for exactly its scopes (kept when already so; a name or key
// trusted otherwise is trust_exists, a key revoked for an overlapping
// scope key_revoked; a key not trusted now that an applied trust statement
// retired for an overlapping scope, and no later statement of that scope
// added again, invalid_policy), each listed threshold is set (one below
// the store's is invalid_policy: a file never lowers a threshold, so an
// older copy cannot undo a rotation), and then every listed
// threshold must be reachable: at least that many trusted keys cover its
// scope (invalid_policy otherwise, naming the scope). Keys it does not
// list are left as they are and reported. Audited (one trust_add or
// trust_threshold entry per change); changes the generation when it
// changes something.
func (s *Store) ApplyTrustPolicy(p *TrustPolicy) (*PolicyResult, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &PolicyResult{Added: []string{}, Kept: []string{}, Thresholds: map[string]uint64{}, NotInPolicy: []string{}}
	var gen uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		tb := bucket(tx, bTrust)
		listed := map[string]bool{}
		now := s.opts.Now()
		retired, err := retiredKeys(tx)
		if err != nil {
			return err
		}
		for _, k := range p.Keys {
			listed[k.Name] = true
			pub, _ := bundle.KeyFromKID(k.Key)
			if by, ok := keyRevokedFor(tx, k.Key, k.Scopes); ok {
				return fail(ErrKeyRevoked, "key %s (%s) is revoked for scope %s in this store; it cannot be trusted for a scope overlapping it", k.Name, k.Key, by)
			}
			var same, clash string
			if err := tb.ForEach(func(_, v []byte) error {
				var r trustRecord
				if err := decode(v, &r); err != nil {
					return err
				}
				keyEq := bytes.Equal(r.Key, pub)
				switch {
				case r.Name == k.Name && keyEq && strings.Join(r.Scopes, ",") == strings.Join(k.Scopes, ","):
					same = r.Name
				case r.Name == k.Name:
					clash = "a trusted key named " + k.Name + " is another key or has other scopes (" + strings.Join(r.Scopes, ", ") + ")"
				case keyEq:
					clash = "key " + k.Key + " is already trusted as " + r.Name
				}
				return nil
			}); err != nil {
				return err
			}
			if clash != "" {
				return fail(ErrTrustExists, "%s: trust rm it first, or change the policy", clash)
			}
			if same != "" {
				res.Kept = append(res.Kept, same)
				continue
			}
			if by, ok := retiredFor(retired[keyID(k.Key)], k.Scopes); ok {
				return invalidPolicy("key %s (%s) was retired for scope %s by a trust statement this store applied: a policy file does not trust it again (an older copy of the file?); trust add it if that is intended", k.Name, k.Key, by)
			}
			if err := tb.Put([]byte(k.Name), encode(trustRecord{Name: k.Name, Key: pub, Scopes: k.Scopes, AddedAt: formatTime(now)})); err != nil {
				return err
			}
			if err := appendAudit(tx, now, AuditEntry{Actor: s.actor(), Verdict: verdictAccepted, Action: "trust_add", TrustName: k.Name, Key: k.Key, Scopes: k.Scopes}); err != nil {
				return err
			}
			res.Added = append(res.Added, k.Name)
		}
		pb := bucket(tx, bTrustPolicy)
		scopes := make([]string, 0, len(p.Thresholds))
		for sc := range p.Thresholds {
			scopes = append(scopes, sc)
		}
		sort.Strings(scopes)
		for _, sc := range scopes {
			n := p.Thresholds[sc]
			cur := uint64(1)
			if v := pb.Get([]byte(sc)); v != nil {
				cur = getU64(v)
			}
			if cur == n {
				continue
			}
			if n < cur {
				return invalidPolicy("the threshold of %s is %d in this store: a policy file never lowers a threshold (an older copy of the file?); trust threshold %s %d does, deliberately", sc, cur, sc, n)
			}
			if err := putThreshold(tx, now, s.actor(), sc, n); err != nil {
				return err
			}
			res.Thresholds[sc] = n
		}
		pol, err := policyTx(tx)
		if err != nil {
			return err
		}
		for _, sc := range scopes {
			covering := 0
			for _, k := range pol.Keys {
				if k.CoversScope(sc) {
					covering++
				}
			}
			if uint64(covering) < p.Thresholds[sc] {
				return invalidPolicy("the threshold of %s is %d but only %d trusted key(s) cover it: nothing under it could be imported", sc, p.Thresholds[sc], covering)
			}
		}
		for _, k := range pol.Keys {
			if !listed[k.Name] {
				res.NotInPolicy = append(res.NotInPolicy, k.Name)
			}
		}
		sort.Strings(res.NotInPolicy)
		res.Unchanged = len(res.Added) == 0 && len(res.Thresholds) == 0
		if res.Unchanged {
			return nil
		}
		gen, err = bumpGeneration(tx)
		return err
	})
	if err != nil {
		return nil, amp.AsError(wrapTx(err))
	}
	if gen != 0 {
		s.gen.Store(gen)
	}
	res.Generation = s.gen.Load()
	return res, nil
}

// retiredKeys returns, per did:key, the scopes whose trust statements
// retired it and did not add it again later, read from the statements the
// store keeps for each scope's chain (in sequence order).
func retiredKeys(tx *bolt.Tx) (map[string][]string, error) {
	byScope := map[string]map[string]bool{} // scope -> did -> retired
	err := bucket(tx, bTrustChain).ForEach(func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i <= 0 || len(k) != i+9 {
			return nil // not a chain entry
		}
		rot, _, err := bundle.ParseRotation(v)
		if err != nil {
			return fail(ErrStoreIO, "trust statement %d of scope %s kept by this store is unreadable", getU64(k[i+1:]), k[:i]).WithCause(err)
		}
		m := byScope[rot.Scope]
		if m == nil {
			m = map[string]bool{}
			byScope[rot.Scope] = m
		}
		for _, did := range rot.Retire {
			m[keyID(did)] = true
		}
		for _, a := range rot.Add {
			delete(m, keyID(a.Key))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for sc, m := range byScope {
		for did := range m {
			out[did] = append(out[did], sc)
		}
	}
	return out, nil
}

// keyID is the one spelling of an Ed25519 did:key the store compares by.
func keyID(did string) string {
	if pub, ok := bundle.KeyFromKID(did); ok {
		return amp.DIDKey(pub)
	}
	return did
}

// retiredFor returns a scope of retiredIn overlapping one of scopes.
func retiredFor(retiredIn, scopes []string) (string, bool) {
	sort.Strings(retiredIn)
	for _, rs := range retiredIn {
		for _, sc := range scopes {
			if bundle.ScopesOverlap(rs, sc) {
				return rs, true
			}
		}
	}
	return "", false
}
