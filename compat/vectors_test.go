package compat

import (
	"sort"
	"testing"
)

// TestCorpusVerdictsAndBreakingPointers runs every pair of testdata/compat:
// the input-side (backward) and output-side (forward) verdicts, and for
// every "no" the rule and the JSON Pointer where it breaks.
func TestCorpusVerdictsAndBreakingPointers(t *testing.T) {
	vs := readVectors(t)
	if len(vs) < 40 {
		t.Fatalf("%d vectors, the corpus needs at least 40", len(vs))
	}
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		v := vs[name]
		t.Run(name, func(t *testing.T) {
			oldSrc, newSrc := NewSource(loaderOf(v.Old)), NewSource(loaderOf(v.New))
			if err := matches(Backward(oldSrc, "schema.json", newSrc, "schema.json"), v.Backward); err != nil {
				t.Errorf("backward (input side): %v", err)
			}
			if err := matches(Forward(oldSrc, "schema.json", newSrc, "schema.json"), v.Forward); err != nil {
				t.Errorf("forward (output side): %v", err)
			}
		})
	}
}
