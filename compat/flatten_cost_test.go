package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// sharedConjunction is one schema document whose "$defs/b" is an allOf
// of parts distinct subschemas, and whose props properties each "$ref"
// it: every property pair of a check flattens the whole allOf, on both
// sides.
func sharedConjunction(parts, props int) memLoader {
	var all []string
	for i := range parts {
		all = append(all, fmt.Sprintf(`{"minimum":%d}`, -i))
	}
	var ps []string
	for i := range props {
		ps = append(ps, fmt.Sprintf(`"p%04d":{"$ref":"#/$defs/b"}`, i))
	}
	doc := `{"type":"object","properties":{` + strings.Join(ps, ",") + `},"$defs":{"b":{"allOf":[` + strings.Join(all, ",") + `]}}}`
	return memLoader{files: map[string][]byte{"s.json": []byte(doc)}}
}

// TestFlattenedPartsAreChargedToTheCheckWork: a comparison step flattens
// "$ref" and "allOf" on both sides, and one step may reach up to 4,096
// schemas a side; charged to nothing, a schema of a few hundred KB met at
// every property costs hours however few steps it takes. Each schema
// flattened costs the check a unit of work (MaxValueWork, counted apart
// from the steps): 60 properties meeting a 4,000-part allOf (480,000
// parts) end Unknown (too_complex), never Compatible, and 5 of them
// (40,000) still decide.
func TestFlattenedPartsAreChargedToTheCheckWork(t *testing.T) {
	for _, tc := range []struct {
		name         string
		props        int
		over         bool
		atLeast      int
		wantVerdicts Verdict
	}{
		{"past the work bound", 60, true, MaxValueWork, Unknown},
		{"within it", 5, false, 5 * 2 * 4001, Compatible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := NewSource(sharedConjunction(4000, tc.props))
			c := &checker{a: src.s, b: src.s, memo: map[string]int{}, assumed: maxInt}
			r := c.run("s.json", "s.json")
			if c.work < tc.atLeast || (c.work > MaxValueWork) != tc.over || r.Verdict != tc.wantVerdicts {
				t.Fatalf("%d properties meeting a 4,000-part allOf: %d units of work, %s %+v; want at least %d, over MaxValueWork %v, %s",
					tc.props, c.work, r.Verdict, r.Findings[:min(2, len(r.Findings))], tc.atLeast, tc.over, tc.wantVerdicts)
			}
			if tc.over && !hasRule(r, "too_complex") {
				t.Fatalf("past the work bound: %+v, want too_complex", r.Findings[:min(2, len(r.Findings))])
			}
		})
	}
}

// TestFlattenCostStaysWithinTheCheckBound: a publisher ships one schema
// (74 KB) whose "$defs/b" is an allOf of 4,000 distinct subschemas and
// whose 100 properties each "$ref" it. flatten looked each part up in a
// slice of the parts seen so far (~4,000²/2 comparisons of node ids a
// side a step) and charged none of it: the check took ~6.5 s here, and a
// 4 MiB document (~130,000 such properties, within MaxSteps) hours of CPU
// for one import or catalog check. The offline compiler accepts this
// schema, so it reaches compat at import and in the catalog. flatten now
// keeps a set keyed by scope, base and node, and charges each part to
// the check's work: the check ends, Unknown (too_complex), well within
// the bound.
//
// Should: the check is too_complex, and the parts flatten put in
// conjunctions (checker.flattened), each a unit of work at least, stay
// within MaxValueWork and the one part that passes it (uncharged, the
// 100 properties flatten 800,000). The time is logged; the set's cost
// against the slice's is BenchmarkFlattenCost's (a hostile and a twin
// run of the same work): no count tells a set lookup from a slice scan.
func TestFlattenCostStaysWithinTheCheckBound(t *testing.T) {
	l := sharedConjunction(4000, 100)
	c := &checker{a: NewSource(l).s, b: NewSource(l).s, memo: map[string]int{}, assumed: maxInt}
	start := time.Now()
	r := c.run("s.json", "s.json")
	t.Logf("one check of a %d-byte schema: %v, %d parts flattened, %d units of work, %v", len(l.files["s.json"]), r.Verdict, c.flattened, c.work, time.Since(start))
	if r.Verdict == Compatible || !hasRule(r, "too_complex") {
		t.Errorf("a check past its work bound is %s %+v, want too_complex", r.Verdict, r.Findings[:min(2, len(r.Findings))])
	}
	if c.flattened > MaxValueWork+1 {
		t.Errorf("one check of a %d-byte schema (100 references to a 4,000-part allOf) flattened %d parts, want at most %d (MaxValueWork and one): flatten's parts are not charged to the check",
			len(l.files["s.json"]), c.flattened, MaxValueWork+1)
	}
}

// BenchmarkFlattenCost times what TestFlattenCostStaysWithinTheCheckBound
// bounds by its count of parts: one check that flattens 100 references
// to a 4,000-part allOf until its work bound ("hostile"), against its
// twin, a check of 2,500 references to a 40-part allOf that ends on the
// same bound after flattening as many parts in conjunctions of 41
// ("twin"). flatten's seen set costs a lookup a part in both; a slice
// scanned for each part would cost the hostile run about 4,000 times
// more a part. The ratio should stay near 1.
func BenchmarkFlattenCost(b *testing.B) {
	for _, bc := range []struct {
		name         string
		parts, props int
	}{{"hostile", 4000, 100}, {"twin", 40, 2500}} {
		l := sharedConjunction(bc.parts, bc.props)
		a, z := NewSource(l), NewSource(l)
		for _, src := range []*Source{a, z} {
			if _, e := src.s.load("s.json"); e != "" {
				b.Fatal(e)
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c := &checker{a: a.s, b: z.s, memo: map[string]int{}, assumed: maxInt}
				if r := c.run("s.json", "s.json"); !hasRule(r, "too_complex") {
					b.Fatalf("%s: %s, want too_complex", bc.name, r.Verdict)
				}
			}
		})
	}
}
