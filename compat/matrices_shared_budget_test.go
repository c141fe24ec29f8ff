package compat

import (
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
)

// TestMatricesOfABundleOfCostlyVersionsShareOneBudget: Matrices (what
// `ampbundle compat FILE --trust KEY` prints, run on a publisher's
// bundle before an operator imports it) computed each matrix with no
// budget (MatrixOf with maxSteps 0): 2n² checks, each bounded only by
// MaxSteps and MaxValueWork. Four versions sharing one schema of a
// 2,500-part allOf (73 KB, the offline compiler takes it) cost 32
// checks, 37 s here; 100 such versions 20,000 checks, hours; where the
// import of the same bundle spends at most MaxBundleSteps.
//
// Want: the checks of all the matrices share MaxBundleSteps for each
// distinct Source; the cells past it are unknown (too_complex), never
// full. Here the budget is lowered to 100,000 and one check of the
// 1,000-part schema (compatible) costs about 31,250 units: before, all
// nine cells were full (18 checks, about 560,000 units).
func TestMatricesOfABundleOfCostlyVersionsShareOneBudget(t *testing.T) {
	const maxBundleSteps = 100_000
	const perCheck = 31_250 // what a check of the 1,000-part schema charges (COMPAT-16)
	src := NewSource(manyPartsSchema(1000, oneProperty, ""))
	var ps []Provided
	for i := 0; i < 3; i++ {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, Provided{Src: src, Descriptor: capability.Descriptor{Name: "org.example.costly", Version: v,
			InputSchema:  capability.SchemaRef{ArtifactKey: "s.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}})
	}
	ms := matrices(ps, maxBundleSteps)
	if len(ms) != 1 || len(ms[0].Cells) != 9 {
		t.Fatalf("got %d matrices, want one of 9 cells", len(ms))
	}
	full, spent := 0, 0
	for _, c := range ms[0].Cells {
		switch c.Level {
		case LevelFull:
			full++
		case LevelUnknown:
			for _, f := range append(c.Input.Findings, c.Output.Findings...) {
				if f.Rule == "too_complex" {
					spent++
					break
				}
			}
		default:
			t.Fatalf("cell %s × %s is %s, want full or unknown", c.Requester, c.Provider, c.Level)
		}
	}
	if full+spent != 9 {
		t.Fatalf("%d cells full and %d past the budget, want all 9 one or the other", full, spent)
	}
	// Each full cell is two checks; the budget pays for at most
	// maxBundleSteps/perCheck of them, and one more that passes it.
	if checks := 2 * full; checks > maxBundleSteps/perCheck+1 {
		t.Fatalf("%d full cells (%d checks of about %d units) within a budget of %d: the matrices did not share it", full, checks, perCheck, maxBundleSteps)
	}
	if spent == 0 {
		t.Fatal("no cell past the budget: not a witness")
	}
}

// TestMatricesOfManyHonestVersionsAreDecidedWhole: the shared budget
// alone (MaxBundleSteps a Source) left most cells of 256 honest versions
// of a dozen-property schema unknown (37,655 of 65,536, a read of
// COMPAT-23 found): the checks of many cheap cells spent it. Each cell
// now brings CellAllowance to the budget, so honest versions are decided
// whole however many a caller passes. Here the bundle's budget is 0 and
// 24 versions of a small schema (576 cells) are all decided, none
// too_complex.
func TestMatricesOfManyHonestVersionsAreDecidedWhole(t *testing.T) {
	const maxBundleSteps = 0
	src := NewSource(memLoader{files: map[string][]byte{"s.json": []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"boolean"}},"required":["a"]}`)}})
	var ps []Provided
	for i := range 24 {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, Provided{Src: src, Descriptor: capability.Descriptor{Name: "org.example.honest", Version: v,
			InputSchema:  capability.SchemaRef{ArtifactKey: "s.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}})
	}
	ms := matrices(ps, maxBundleSteps)
	if len(ms) != 1 || len(ms[0].Cells) != 24*24 {
		t.Fatalf("got %d matrices, want one of %d cells", len(ms), 24*24)
	}
	for _, c := range ms[0].Cells {
		if c.Level != LevelFull {
			t.Fatalf("cell %s × %s is %s, want full: an honest cell left to the exhausted bundle budget", c.Requester, c.Provider, c.Level)
		}
	}
}

// TestACostlyCapabilitySortingFirstLeavesTheOthersTheirAllowance: the
// matrices' budget was one pool spent in name order, each name's cell
// allowance poured into it: a publisher's costly capability named to
// sort first spent it all, and every honest capability after it came
// out unknown (a read of COMPAT-23 measured 0 of 64 honest cells
// decided). Each name now spends its own cells' allowance before the
// shared pool: the honest name is decided whole.
func TestACostlyCapabilitySortingFirstLeavesTheOthersTheirAllowance(t *testing.T) {
	const maxBundleSteps = 100_000
	costly := NewSource(manyPartsSchema(1000, oneProperty, ""))
	honest := NewSource(memLoader{files: map[string][]byte{"s.json": []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`)}})
	var ps []Provided
	for i := range 8 {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name string
			src  *Source
		}{{"a.costly", costly}, {"z.honest", honest}} {
			ps = append(ps, Provided{Src: p.src, Descriptor: capability.Descriptor{Name: p.name, Version: v,
				InputSchema:  capability.SchemaRef{ArtifactKey: "s.json"},
				OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}})
		}
	}
	ms := matrices(ps, maxBundleSteps)
	if len(ms) != 2 || ms[1].Capability != "z.honest" {
		t.Fatalf("got %d matrices, want a.costly then z.honest", len(ms))
	}
	costlyFull := 0
	for _, c := range ms[0].Cells {
		if c.Level == LevelFull {
			costlyFull++
		}
	}
	if costlyFull == len(ms[0].Cells) {
		t.Fatal("every costly cell decided: the costly capability did not spend the pool, not a witness")
	}
	for _, c := range ms[1].Cells {
		if c.Level != LevelFull {
			t.Fatalf("honest cell %s × %s is %s: the capability sorting first left it nothing", c.Requester, c.Provider, c.Level)
		}
	}
}
