package main

import (
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
)

// TestCompatOfTenThousandVersionsOfOneNameIsRefusedBeforeItsMatrix: a
// bundle may carry 10,000 versions of one capability; compat built their
// n² cells (10^8, tens of GB) before printing any, the shared comparison
// budget (COMPAT-23) making each cell cheap but not the matrix small. More
// than maxCompatVersions versions of one name are now refused,
// limit_exceeded, before a matrix is built; as many of several names pass.
func TestCompatOfTenThousandVersionsOfOneNameIsRefusedBeforeItsMatrix(t *testing.T) {
	versions := func(name string, n int) []compat.Provided {
		ps := make([]compat.Provided, n)
		for i := range ps {
			v, err := capability.ParseVersion(fmt.Sprintf("1.0.%d", i))
			if err != nil {
				t.Fatal(err)
			}
			ps[i] = compat.Provided{Descriptor: capability.Descriptor{Name: name, Version: v}}
		}
		return ps
	}
	for _, tc := range []struct {
		name    string
		ps      []compat.Provided
		refused bool
	}{
		{"one name, at the bound", versions("org.example.a", maxCompatVersions), false},
		{"one name, one past the bound", versions("org.example.a", maxCompatVersions+1), true},
		{"one name, 10,000 versions", versions("org.example.a", 10000), true},
		{"two names, each at the bound", append(versions("org.example.a", maxCompatVersions), versions("org.example.b", maxCompatVersions)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCompatVersions(tc.ps)
			if got := err != nil; got != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
			}
			if tc.refused && amp.NameOf(err) != "limit_exceeded" {
				t.Fatalf("refused as %q, want limit_exceeded", amp.NameOf(err))
			}
		})
	}
}
