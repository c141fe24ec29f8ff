package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
)

// TestCompatOfTenThousandVersionsIsBoundedBeforeItsMatrices: a bundle may
// carry 10,000 versions of one capability, or 39 names of 256; compat
// built all their n² cells (10^8, tens of GB; or 2.5 million, over a GB)
// before printing any, the comparison budget (COMPAT-23) making each cell
// cheap but not the matrices small. Now the newest maxCompatVersions
// versions of each name are compared (a note says so), and matrices of
// more than maxCompatCells cells in all are refused, limit_exceeded,
// before any is built.
func TestCompatOfTenThousandVersionsIsBoundedBeforeItsMatrices(t *testing.T) {
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
	names := func(k, n int) []compat.Provided {
		var ps []compat.Provided
		for i := range k {
			ps = append(ps, versions(fmt.Sprintf("org.example.c%d", i), n)...)
		}
		return ps
	}
	for _, tc := range []struct {
		name    string
		ps      []compat.Provided
		kept    int  // versions kept, when not refused
		noted   bool // a note says versions were cut
		refused bool
	}{
		{"one name, at the bound", versions("org.example.a", maxCompatVersions), maxCompatVersions, false, false},
		{"one name, 10,000 versions", versions("org.example.a", 10000), maxCompatVersions, true, false},
		{"39 names of 256 versions", names(39, 256), 39 * maxCompatVersions, true, false},
		{"156 names at the bound (a bundle's 10,000 capabilities)", names(156, maxCompatVersions), 0, false, true},
		{"64 names at the bound", names(64, maxCompatVersions), 64 * maxCompatVersions, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var notes bytes.Buffer
			kept, err := limitCompatVersions(&notes, tc.ps)
			if got := err != nil; got != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
			}
			if tc.refused {
				if amp.NameOf(err) != "limit_exceeded" {
					t.Fatalf("refused as %q, want limit_exceeded", amp.NameOf(err))
				}
				return
			}
			if len(kept) != tc.kept {
				t.Fatalf("%d versions kept, want %d", len(kept), tc.kept)
			}
			if got := strings.Contains(notes.String(), "the newest"); got != tc.noted {
				t.Fatalf("note %q, want one: %v", notes.String(), tc.noted)
			}
			if want := fmt.Sprintf("1.0.%d", len(tc.ps)/(len(kept)/maxCompatVersions)-1); tc.noted && kept[maxCompatVersions-1].Descriptor.Version.String() != want {
				t.Fatalf("kept up to %s, want the newest, %s", kept[maxCompatVersions-1].Descriptor.Version, want)
			}
		})
	}
}
