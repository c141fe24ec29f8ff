package compat

import (
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// Error names of claim checks.
const (
	// ErrClaimUnproven: the builder refuses a policy or supported_ranges
	// that the verdicts contradict.
	ErrClaimUnproven amp.ErrName = "compatibility_claim_unproven"
	// ErrFalseClaim: a bundle's signed claims differ from the verdicts the
	// importer derives, or its policy contradicts them.
	ErrFalseClaim amp.ErrName = "false_compatibility_claim"
)

// DeriveClaims computes, for every descriptor that declares a policy, the
// claims for callers of each other version of the same capability among descs that its
// SupportedRanges cover (sorted by version; nil when none). Schemas are
// read from src by the descriptors' artifact keys.
func DeriveClaims(descs []capability.Descriptor, src *Source) [][]capability.CompatClaim {
	out := make([][]capability.CompatClaim, len(descs))
	for i, d := range descs {
		if d.Policy == "" {
			continue // no policy declared: exact version only, nothing claimed
		}
		var cs []capability.CompatClaim
		for j, caller := range descs {
			if i == j || caller.Name != d.Name || caller.Version == d.Version || !covered(d, caller.Version) {
				continue
			}
			r := Versions(
				Version{Src: src, Input: caller.InputSchema.ArtifactKey, Output: caller.OutputSchema.ArtifactKey},
				Version{Src: src, Input: d.InputSchema.ArtifactKey, Output: d.OutputSchema.ArtifactKey})
			cs = append(cs, capability.CompatClaim{Version: caller.Version, Input: string(r.Input.Verdict), Output: string(r.Output.Verdict)})
		}
		capability.SortClaims(cs)
		out[i] = cs
	}
	return out
}

// covered reports whether d's supported_ranges contain v.
func covered(d capability.Descriptor, v capability.Version) bool {
	for _, r := range d.SupportedRanges {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

// policyProblem names how a descriptor's policy contradicts its claims, or
// "" when it does not.
func policyProblem(d capability.Descriptor, claims []capability.CompatClaim) string {
	switch d.Policy.Effective() {
	case capability.PolicyBridge:
		return "policy bridge needs declarative adapters, which this version does not support"
	case capability.PolicyRange:
		if len(d.SupportedRanges) == 0 {
			return "policy range needs supported_ranges"
		}
		for _, c := range claims {
			if !c.Compatible() {
				return "supported_ranges cover " + c.Version.String() + ", whose callers are not proven compatible (input " + c.Input + ", output " + c.Output + ")"
			}
		}
	}
	return ""
}

// Annotate is what a bundle builder does: it sets every descriptor's
// CompatClaims to the derived verdicts and refuses (ErrClaimUnproven,
// code 0) a descriptor whose policy the verdicts contradict. descs is not
// modified; the result is a new slice.
func Annotate(descs []capability.Descriptor, src *Source) ([]capability.Descriptor, error) {
	claims := DeriveClaims(descs, src)
	out := make([]capability.Descriptor, len(descs))
	for i, d := range descs {
		if why := policyProblem(d, claims[i]); why != "" {
			return nil, amp.Named(0, ErrClaimUnproven, "%s: %s", d.ID().String(), why)
		}
		d.CompatClaims = claims[i]
		out[i] = d
	}
	return out, nil
}

// VerifyClaims is what an importer does: it re-derives the verdicts and
// refuses (ErrFalseClaim, code 0) a descriptor whose signed claims differ
// or whose policy they contradict. A descriptor with neither a policy nor
// claims (a bundle from before policies) is left as it is: it behaves as
// strict.
func VerifyClaims(descs []capability.Descriptor, src *Source) error {
	claims := DeriveClaims(descs, src)
	for i, d := range descs {
		if d.Policy == "" && d.CompatClaims == nil {
			continue
		}
		if !sameClaims(d.CompatClaims, claims[i]) {
			return amp.Named(0, ErrFalseClaim, "%s: the signed compatibility claims differ from the verdicts derived from the bundle's schemas", d.ID().String())
		}
		if why := policyProblem(d, claims[i]); why != "" {
			return amp.Named(0, ErrFalseClaim, "%s: %s", d.ID().String(), why)
		}
	}
	return nil
}

func sameClaims(a, b []capability.CompatClaim) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
