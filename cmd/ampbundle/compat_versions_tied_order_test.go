package main

import (
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
)

// TestCompatCutOfVersionsTiedOnPrecedenceIgnoresTheirOrder: the attack: a
// bundle of maxCompatVersions+1 versions of one name, two of them equal
// in SemVer precedence (1.0.0+a and 1.0.0+b, build metadata only) and
// the oldest, so that the cut falls between them. compat kept the newest
// by precedence alone, with an unstable sort: which of the two was
// compared followed the order of the manifest (the publisher's) and of
// the store, and could differ from what the catalog compares, which cuts
// by the total order matrices sort by (precedence, then the text).
// Expected: one rule, compat.NewestVersions, keeps 1.0.0+b whatever the
// order (docs/SPEC-DECISIONS.md COMPAT-24).
func TestCompatCutOfVersionsTiedOnPrecedenceIgnoresTheirOrder(t *testing.T) {
	mk := func(s string) compat.Provided {
		v, err := capability.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return compat.Provided{Descriptor: capability.Descriptor{Name: "org.example.a", Version: v}}
	}
	newer := func() []compat.Provided {
		var ps []compat.Provided
		for i := range maxCompatVersions - 1 {
			ps = append(ps, mk(fmt.Sprintf("2.0.%d", i)))
		}
		return ps
	}
	for _, tc := range []struct {
		name string
		ps   []compat.Provided
	}{
		{"a then b, first", append([]compat.Provided{mk("1.0.0+a"), mk("1.0.0+b")}, newer()...)},
		{"b then a, first", append([]compat.Provided{mk("1.0.0+b"), mk("1.0.0+a")}, newer()...)},
		{"a then b, last", append(newer(), mk("1.0.0+a"), mk("1.0.0+b"))},
		{"b then a, last", append(newer(), mk("1.0.0+b"), mk("1.0.0+a"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, err := limitCompatVersions(io.Discard, tc.ps)
			if err != nil {
				t.Fatal(err)
			}
			var tied []string
			for _, p := range kept {
				if v := p.Descriptor.Version.String(); v[0] == '1' {
					tied = append(tied, v)
				}
			}
			if len(kept) != maxCompatVersions || !slices.Equal(tied, []string{"1.0.0+b"}) {
				t.Fatalf("kept %d versions, of the tied ones %v; want %d and [1.0.0+b], the newer in the matrices' order",
					len(kept), tied, maxCompatVersions)
			}
		})
	}
}
