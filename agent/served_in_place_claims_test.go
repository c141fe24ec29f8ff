package agent

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// servedInPlaceByLookup is servedInPlace as it was before SCALE-20: every
// provided version, highest first, for every requested version.
func servedInPlaceByLookup(cat *resolver.Catalog, name string, requested, provided []capability.Version) (capability.ID, capability.Version, bool) {
	for _, v := range requested {
		if v.IsZero() {
			continue
		}
		for i := len(provided) - 1; i >= 0; i-- {
			id := capability.ID{Name: name, Version: provided[i]}
			e, found := cat.Lookup(id)
			if !found || !e.Descriptor.Supports(v) {
				continue
			}
			c, has := e.Descriptor.Claim(v)
			switch e.Descriptor.Policy {
			case capability.PolicyRange:
				if has && c.Compatible() {
					return id, v, true
				}
			case capability.PolicyBridge:
				if has && e.Descriptor.Bridge != nil {
					return id, v, true
				}
			}
		}
	}
	return capability.ID{}, capability.Version{}, false
}

// TestServedInPlaceByClaimsIsTheLookupsAnswer: reading the claims once
// (SCALE-20) picks, for random catalogs of range, bridge and strict
// descriptors with compatible, incompatible and repeated claims, the
// version the try of every pair picked, for the same requested version.
func TestServedInPlaceByClaimsIsTheLookupsAnswer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ver := func(maj, min int) capability.Version { return mustVersion(t, fmt.Sprintf("%d.%d.0", maj, min)) }
	verdicts := []string{capability.VerdictCompatible, capability.VerdictIncompatible, capability.VerdictUnknown}
	policies := []capability.Policy{capability.PolicyRange, capability.PolicyBridge, capability.PolicyStrict, ""}
	const name = "org.agentries.claims"
	served := 0
	for round := range 10000 {
		var es []resolver.Entry
		var provided []capability.Version
		for m := range 1 + r.IntN(6) {
			d := capability.Descriptor{Name: name, Version: ver(m+1, 0), Policy: policies[r.IntN(len(policies))]}
			if r.IntN(3) > 0 {
				d.SupportedRanges = []capability.Range{mustRange(fmt.Sprintf(">=%d.0.0 <%d.0.0", r.IntN(m+1)+1, m+1+r.IntN(2)))}
			}
			if r.IntN(4) > 0 {
				d.Bridge = &capability.SchemaRef{ArtifactKey: "bridge.json"}
			}
			for range r.IntN(5) {
				v := ver(1+r.IntN(m+2), r.IntN(3))
				d.CompatClaims = append(d.CompatClaims, capability.CompatClaim{Version: v,
					Input: verdicts[r.IntN(3)], Output: verdicts[r.IntN(2)]})
			}
			es = append(es, resolver.Entry{Descriptor: d})
			if r.IntN(4) > 0 {
				provided = append(provided, d.Version)
			}
		}
		cat := &resolver.Catalog{Names: []string{name}, ByName: map[string][]resolver.Entry{name: es}}
		var requested []capability.Version
		for range r.IntN(6) {
			if r.IntN(8) == 0 {
				requested = append(requested, capability.Version{})
				continue
			}
			requested = append(requested, ver(1+r.IntN(7), r.IntN(3)))
		}
		wantID, wantV, wantOK := servedInPlaceByLookup(cat, name, requested, provided)
		gotID, gotV, gotOK := servedInPlace(cat, name, requested, provided)
		if wantOK {
			served++
		}
		if gotID != wantID || gotV != wantV || gotOK != wantOK {
			t.Fatalf("round %d: %v %v %v, by lookups %v %v %v", round, gotID, gotV, gotOK, wantID, wantV, wantOK)
		}
	}
	if served < 200 {
		t.Fatalf("only %d of 10000 rounds were served in place: the catalogs test too little", served)
	}
}
