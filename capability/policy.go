package capability

import "sort"

// Policy is a provider's compatibility policy for one capability version
// (RFC 004 §8), carried in the descriptor as "policy".
type Policy string

// Policies. The zero value (field absent) behaves as PolicyStrict: RFC 004
// §4.2 supports only the exact version when nothing else is declared.
const (
	// PolicyStrict: only the exact version is served.
	PolicyStrict Policy = "strict"
	// PolicyRange: a request for another version is served when
	// supported_ranges cover it and the compatibility claim for that
	// version is "compatible".
	PolicyRange Policy = "range"
	// PolicyBridge: declarative adapters between versions (reserved: a
	// bundle builder of this version refuses it).
	PolicyBridge Policy = "bridge"
)

// Valid reports whether p is absent or one of the three policies.
func (p Policy) Valid() bool {
	switch p {
	case "", PolicyStrict, PolicyRange, PolicyBridge:
		return true
	}
	return false
}

// Effective is p with the absent value read as PolicyStrict.
func (p Policy) Effective() Policy {
	if p == "" {
		return PolicyStrict
	}
	return p
}

// Verdict texts of a CompatClaim.
const (
	VerdictCompatible   = "compatible"
	VerdictIncompatible = "incompatible"
	VerdictUnknown      = "unknown"
)

// CompatClaim is the signed claim that a caller written for Version is (or
// is not) served correctly by the descriptor's version: Input is the
// verdict that every request valid for Version's input schema is valid for
// the descriptor's, Output that every result valid for the descriptor's
// output schema is valid for Version's. It is carried in the descriptor's
// "compat_claims" array as {"version", "input", "output"}.
type CompatClaim struct {
	Version Version
	Input   string
	Output  string
}

// Compatible reports whether both sides are "compatible".
func (c CompatClaim) Compatible() bool {
	return c.Input == VerdictCompatible && c.Output == VerdictCompatible
}

// Claim returns the descriptor's claim for callers of v.
func (d Descriptor) Claim(v Version) (CompatClaim, bool) {
	for _, c := range d.CompatClaims {
		if c.Version == v {
			return c, true
		}
	}
	return CompatClaim{}, false
}

func validVerdict(s string) bool {
	return s == VerdictCompatible || s == VerdictIncompatible || s == VerdictUnknown
}

// SortClaims orders claims by version (the one encoding).
func SortClaims(cs []CompatClaim) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Version.Compare(cs[j].Version) < 0 })
}
