package compat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// splitUnionPair is a producer whose props properties each refer to one
// anyOf of n string branches (with an "$id" each when withID), and an
// acceptor that wants an integer for each: every property splits the
// producer's union into its n branches, each compared and lost.
func splitUnionPair(n, props int, withID bool) memLoader {
	br := make([]string, n)
	for i := range br {
		if withID {
			br[i] = fmt.Sprintf(`{"$id":"b%d","type":"string","minLength":%d}`, i, i)
		} else {
			br[i] = fmt.Sprintf(`{"type":"string","minLength":%d}`, i)
		}
	}
	var pp, ap []string
	for i := range props {
		pp = append(pp, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/u"}`, i))
		ap = append(ap, fmt.Sprintf(`"p%d":{"type":"integer"}`, i))
	}
	return memLoader{files: map[string][]byte{
		"p.json": []byte(`{"type":"object","properties":{` + strings.Join(pp, ",") + `},"$defs":{"u":{"anyOf":[` + strings.Join(br, ",") + `]}}}`),
		"a.json": []byte(`{"type":"object","properties":{` + strings.Join(ap, ",") + `}}`),
	}}
}

// TestProducerUnionSplitLooksUpItsBranchesOnce: a comparison whose
// producer carries an anyOf (or oneOf) asks whether a branch of it is
// already in the conjunction (expanded) before splitting it, and asked
// each branch in turn, building each branch's node (its pointer, and its
// "$id" resolved): at the i-th comparison of a split, i branches, n²/2
// for a union of n, charged nothing (the split itself costs n steps). A
// union of 2,000 branches met from 2 properties (a 69 KB producer the
// offline compiler takes) built 4 million branch nodes, 11.8 million
// allocations for 4,003 steps (about 6 s here); each more property adds
// 2 million, up to MaxSteps (99 properties). Now the parts of the
// conjunction are indexed by the union they are branches of
// (unionBranches): a split costs its comparisons, and what each
// allocates is bounded by the conjunction, not by the union. The
// verdicts are unchanged.
func TestProducerUnionSplitLooksUpItsBranchesOnce(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation counts differ under the race detector")
	}
	for _, tc := range []struct {
		name     string
		n, props int
		withID   bool
	}{
		{"2,000 branches met from 2 properties", 2000, 2, false},
		{"2,000 branches with an $id each met from 2 properties", 2000, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := splitUnionPair(tc.n, tc.props, tc.withID)
			if _, err := offlineschema.Compile(l, "p.json", offlineschema.Options{}); err != nil {
				t.Fatalf("the offline compiler refuses the producer: %v", err)
			}
			var c *checker
			var r Report
			allocs := testing.AllocsPerRun(1, func() {
				a, b := parsedPair(t, l)
				c = &checker{a: a.s, b: b.s, memo: map[string]int{}, assumed: maxInt}
				r = c.run("p.json", "a.json")
			})
			if r.Verdict != Incompatible || !hasRule(r, "type_narrowed") {
				t.Fatalf("%s %+v, want incompatible (type_narrowed)", r.Verdict, r.Findings[:min(2, len(r.Findings))])
			}
			if c.steps < tc.props*tc.n {
				t.Fatalf("%d steps: the union was not split at each property", c.steps)
			}
			if most := float64(maxAllocsPerStep * c.steps); allocs > most {
				t.Errorf("%.0f allocations for %d steps (%d units of work), want at most %.0f: the branches are looked up one by one at each comparison of the split",
					allocs, c.steps, c.work, most)
			}
		})
	}
}

// maxAllocsPerStep bounds what one comparison of a split allocates
// (its conjunction of a few parts flattened, its facts, its findings).
const maxAllocsPerStep = 100

// parsedPair is two Sources of l with p.json and a.json parsed.
func parsedPair(t testing.TB, l memLoader) (*Source, *Source) {
	t.Helper()
	a, b := NewSource(l), NewSource(l)
	if _, e := a.s.load("p.json"); e != "" {
		t.Fatal(e)
	}
	if _, e := b.s.load("a.json"); e != "" {
		t.Fatal(e)
	}
	return a, b
}
