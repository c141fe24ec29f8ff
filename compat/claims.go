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
		if len(d.SupportedRanges) == 0 {
			return "policy bridge needs supported_ranges"
		}
		if d.Bridge == nil {
			return "policy bridge needs a bridge"
		}
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
		if err := checkDescriptorBridge(descs, d, src); err != nil {
			return nil, err
		}
		d.CompatClaims = claims[i]
		out[i] = d
	}
	return out, nil
}

// VerifyClaims is what an importer does: it re-derives the verdicts and
// refuses (ErrFalseClaim, code 0) a descriptor whose signed claims are
// more permissive than the derived ones (a side signed "compatible" that
// is not derived so, a version added, missing or reordered) or whose
// policy contradicts either. A side signed "unknown" or "incompatible"
// where the importer's checker now decides more is accepted and kept as
// signed: it serves no caller the derived verdict would refuse, and a
// bundle signed by an older checker keeps importing (COMPAT-5 in
// docs/SPEC-DECISIONS.md). A descriptor with neither a policy nor
// claims (a bundle from before policies) is left as it is: it behaves as
// strict.
func VerifyClaims(descs []capability.Descriptor, src *Source) error {
	claims := DeriveClaims(descs, src)
	for i, d := range descs {
		if d.Policy == "" && d.CompatClaims == nil {
			continue
		}
		if !noMorePermissive(d.CompatClaims, claims[i]) {
			return amp.Named(0, ErrFalseClaim, "%s: the signed compatibility claims claim more than the verdicts derived from the bundle's schemas", d.ID().String())
		}
		for _, cs := range [][]capability.CompatClaim{d.CompatClaims, claims[i]} {
			if why := policyProblem(d, cs); why != "" {
				return amp.Named(0, ErrFalseClaim, "%s: %s", d.ID().String(), why)
			}
		}
		if err := checkDescriptorBridge(descs, d, src); err != nil {
			return err
		}
	}
	return nil
}

// noMorePermissive reports whether the signed claims name exactly the
// derived claims' versions, in order, and call no side compatible that
// the derived verdict does not.
func noMorePermissive(signed, derived []capability.CompatClaim) bool {
	if len(signed) != len(derived) {
		return false
	}
	for i, c := range signed {
		d := derived[i]
		if c.Version != d.Version {
			return false
		}
		if (c.Input == capability.VerdictCompatible && d.Input != capability.VerdictCompatible) ||
			(c.Output == capability.VerdictCompatible && d.Output != capability.VerdictCompatible) {
			return false
		}
	}
	return true
}

// checkDescriptorBridge re-checks the bridge of a descriptor under policy
// bridge from the bundle's own bytes: the bytes have the reference's hash,
// parse (ParseBridge), and remove no member that the provider's input
// schema requires (input side) or that the output schema of any carried
// version its supported_ranges cover requires (output side; CheckBridge).
// Any failure is ErrBridgeMalformed or ErrBridgeDropsRequired, code 0.
func checkDescriptorBridge(descs []capability.Descriptor, d capability.Descriptor, src *Source) error {
	if d.Bridge == nil {
		return nil
	}
	id := d.ID().String()
	data, err := src.s.l.Load(d.Bridge.ArtifactKey)
	if err != nil || !d.Bridge.Matches(data) {
		return amp.Named(0, ErrBridgeMalformed, "%s: the bridge artifact is missing or does not match its hash", id)
	}
	b, err := ParseBridge(data)
	if err != nil {
		return amp.Named(0, ErrBridgeMalformed, "%s: %s", id, amp.SafeMessage(err))
	}
	in := Schema{Loader: src.s.l, Key: d.InputSchema.ArtifactKey}
	checked := false
	for _, caller := range descs {
		if caller.Name != d.Name || caller.Version == d.Version || !covered(d, caller.Version) {
			continue
		}
		checked = true
		if err := CheckBridge(b, in, Schema{Loader: src.s.l, Key: caller.OutputSchema.ArtifactKey}); err != nil {
			return amp.Named(0, ErrBridgeDropsRequired, "%s (for callers of %s): %s", id, caller.Version.String(), amp.SafeMessage(err))
		}
	}
	if !checked {
		// No covered caller is carried: nothing is served through the
		// bridge, but its input side is still checked.
		return CheckBridge(&Bridge{Input: b.Input}, in, Schema{})
	}
	return nil
}
