package compat

import (
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
)

// TestNewestVersionsCutTiedVersionsWhateverTheirOrder: versions equal in
// SemVer precedence (build metadata only) straddling the cut are kept by
// the total order matrices sort by, not by the order the caller passes
// (docs/SPEC-DECISIONS.md COMPAT-24); within the bound, or with no
// bound, vs is returned as it is.
func TestNewestVersionsCutTiedVersionsWhateverTheirOrder(t *testing.T) {
	ver := func(v capability.Version) capability.Version { return v }
	vs := func(ss ...string) []capability.Version {
		var out []capability.Version
		for _, s := range ss {
			v, err := capability.ParseVersion(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	str := func(vs []capability.Version) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.String())
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []string
		n    int
		want []string
	}{
		{"a then b", []string{"1.0.0+a", "1.0.0+b", "2.0.0"}, 2, []string{"1.0.0+b", "2.0.0"}},
		{"b then a", []string{"1.0.0+b", "1.0.0+a", "2.0.0"}, 2, []string{"1.0.0+b", "2.0.0"}},
		{"newest first", []string{"2.0.0", "1.0.0+b", "1.0.0+a"}, 2, []string{"1.0.0+b", "2.0.0"}},
		{"prerelease older", []string{"2.0.0", "2.0.0-rc.1", "1.9.0"}, 2, []string{"2.0.0-rc.1", "2.0.0"}},
		{"within the bound: as passed", []string{"2.0.0", "1.0.0"}, 2, []string{"2.0.0", "1.0.0"}},
		{"no bound: as passed", []string{"2.0.0", "1.0.0", "3.0.0"}, 0, []string{"2.0.0", "1.0.0", "3.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := vs(tc.in...)
			got := NewestVersions(in, tc.n, ver)
			if !slices.Equal(str(got), tc.want) {
				t.Fatalf("NewestVersions(%v, %d) = %v, want %v", tc.in, tc.n, str(got), tc.want)
			}
			if !slices.Equal(str(in), tc.in) {
				t.Fatalf("the input was modified: %v", str(in))
			}
		})
	}
}
