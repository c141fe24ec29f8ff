package resolver

import (
	"slices"
	"sort"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/strictjson"
	"github.com/ampbundle/ampbundle/trust"
)

// TrustPolicyFormat is the format string of a trust policy file
// (docs/FORMAT.md, "Trust policy files").
const TrustPolicyFormat = "ampbundle-trust-policy/1"

// Trust policy file limits (docs/FORMAT.md, "Trust policy files"). The
// counts are trust's, which trust.ApplyPolicy checks itself
// (docs/SPEC-DECISIONS.md TRUST-30).
const (
	MaxTrustPolicySize       = 1 << 20 // bytes
	MaxTrustPolicyKeys       = trust.MaxPolicyKeys
	MaxTrustPolicyThresholds = trust.MaxPolicyThresholds
	MaxTrustPolicyKeyScopes  = trust.MaxPolicyKeyScopes
)

// ErrInvalidPolicy names a trust policy file that is not well formed, or
// that the store cannot apply as a whole.
const ErrInvalidPolicy = trust.ErrInvalidPolicy

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
	if err := trust.CheckPolicyCounts(len(p.Keys), len(p.Thresholds)); err != nil {
		return nil, err
	}
	if len(p.Keys) == 0 && len(p.Thresholds) == 0 {
		return nil, invalidPolicy("it names no key and no threshold")
	}
	names, dids := map[string]bool{}, map[string]bool{}
	for i := range p.Keys {
		k := &p.Keys[i]
		if !trust.ValidName(k.Name) {
			return nil, invalidPolicy("key %d: name must be 1-%d characters of [A-Za-z0-9._-@]", i+1, trust.MaxNameLen)
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
			c, err := trust.CleanScope(sc)
			if err != nil {
				return nil, invalidPolicy("key %s: scope %d must be * or a reverse-domain prefix such as org.example", k.Name, j+1)
			}
			k.Scopes[j] = c
		}
		sort.Strings(k.Scopes)
		k.Scopes = slices.Compact(k.Scopes)
	}
	clean := make(map[string]uint64, len(p.Thresholds))
	for sc, n := range p.Thresholds {
		c, err := trust.CleanScope(sc)
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
// in one transaction, or changes nothing, as trust.ApplyPolicy decides:
// each listed key trusted for exactly its scopes (trust_exists,
// key_revoked or invalid_policy when it cannot be), each listed threshold
// set but never lowered, every listed threshold reachable; keys it does not
// list are left as they are and reported. Audited (one trust_add or
// trust_threshold entry per change); changes the generation when it
// changes something.
func (s *Store) ApplyTrustPolicy(p *TrustPolicy) (*PolicyResult, error) {
	file := &trust.PolicyFile{Thresholds: p.Thresholds}
	for _, k := range p.Keys {
		file.Keys = append(file.Keys, trust.PolicyKey{Name: k.Name, Key: k.Key, Scopes: k.Scopes})
	}
	var r *trust.PolicyEffects
	gen, err := s.updateTrust(selection{all: true, chains: true, removed: true}, func(st *trust.State, now time.Time) (*trust.Effects, error) {
		var err error
		if _, r, err = trust.ApplyPolicy(st, file, now); err != nil {
			return nil, err
		}
		return r.Effects, nil
	})
	if err != nil {
		return nil, err
	}
	return &PolicyResult{Added: r.Added, Kept: r.Kept, Thresholds: r.Thresholds, NotInPolicy: r.NotInPolicy, Unchanged: r.Unchanged, Generation: gen}, nil
}
