package compat

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
)

// flippingVersions are n versions of org.example.flip over one source,
// whose schemas alternate between props properties of type string and
// the same properties of type integer: neighbours are incompatible at
// every property, and each version is fully compatible with itself.
func flippingVersions(t *testing.T, n, props int) []Provided {
	t.Helper()
	schema := func(typ string) json.RawMessage {
		ps := make([]string, props)
		for i := range ps {
			ps[i] = fmt.Sprintf(`"p%d":{"type":%q}`, i, typ)
		}
		return json.RawMessage(`{"type":"object","properties":{` + strings.Join(ps, ",") + `}}`)
	}
	src := NewSource(loaderOf(map[string]json.RawMessage{"s.json": schema("string"), "i.json": schema("integer")}))
	var vs []Provided
	for i := n - 1; i >= 0; i-- { // newest first: MatrixOf sorts
		v, err := capability.ParseVersion(fmt.Sprintf("%d.0.0", i+1))
		if err != nil {
			t.Fatal(err)
		}
		key := "s.json"
		if i%2 == 1 {
			key = "i.json"
		}
		vs = append(vs, Provided{Src: src, Descriptor: capability.Descriptor{Name: "org.example.flip", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}}})
	}
	return vs
}

// TestHostileMatrixCannotSpendMoreThanItsStepBudget: a publisher's
// versions make every check of a matrix cost up to MaxSteps, and a matrix
// of n versions is 2n² checks. With a budget, the comparisons of the
// whole matrix stop there: every cell left is unknown (too_complex, never
// full, even a version against itself), and a budget that is not reached
// changes nothing.
func TestHostileMatrixCannotSpendMoreThanItsStepBudget(t *testing.T) {
	vs := flippingVersions(t, 4, 20)
	want := Matrices(vs)[0]
	if got := MatrixOf(vs, 0, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("MatrixOf without bounds is not the matrix Matrices computes")
	}
	if got := MatrixOf(vs, 1<<30, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("a budget that is not reached changes the matrix")
	}
	// Two steps: the first cell (1.0.0 against itself: one step a side).
	got := MatrixOf(vs, 2, nil)
	if got.Cells[0].Level != LevelFull {
		t.Fatalf("the first cell, within the budget, is %s", got.Cells[0].Level)
	}
	for i, c := range got.Cells[1:] {
		if c.Level != LevelUnknown {
			t.Errorf("cell %d (%s on %s) past the budget is %s, want unknown", i+1, c.Requester, c.Provider, c.Level)
			continue
		}
		if f := c.Input.Findings; len(f) != 1 || f[0].Rule != "too_complex" || !strings.Contains(f[0].Detail, "budget") {
			t.Errorf("cell %d past the budget: input findings %+v, want one too_complex naming the budget", i+1, f)
		}
	}
}

// TestMatrixKeepsOnlyTheFindingsItsCallerKeeps: keep sees each cell as
// it is decided and may drop findings; the levels stay those of the full
// matrix.
func TestMatrixKeepsOnlyTheFindingsItsCallerKeeps(t *testing.T) {
	vs := flippingVersions(t, 4, 50)
	want := Matrices(vs)[0]
	seen := 0
	got := MatrixOf(vs, 0, func(c *Cell) {
		seen++
		c.Input.Findings, c.Output.Findings, c.Lost = c.Input.Findings[:min(1, len(c.Input.Findings))], nil, nil
	})
	if seen != len(want.Cells) || len(got.Cells) != len(want.Cells) {
		t.Fatalf("keep saw %d cells, the matrix has %d (want %d)", seen, len(got.Cells), len(want.Cells))
	}
	for i, c := range got.Cells {
		if c.Level != want.Cells[i].Level || len(c.Input.Findings) > 1 || len(c.Output.Findings) > 0 {
			t.Errorf("cell %d: level %s (want %s), %d+%d findings kept", i, c.Level, want.Cells[i].Level, len(c.Input.Findings), len(c.Output.Findings))
		}
	}
	if len(want.Cells[1].Input.Findings) != 50 {
		t.Fatalf("the full matrix has %d findings in a flipping cell, want 50", len(want.Cells[1].Input.Findings))
	}
}
