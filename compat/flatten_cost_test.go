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
// the bound. The time bound is 5 s (the check takes well under 1 s
// alone; 2 s failed on a loaded 2-core CI machine), still below the
// quadratic walk's 6.5 s unloaded; too_complex is asserted too, which
// load cannot move.
func TestFlattenCostStaysWithinTheCheckBound(t *testing.T) {
	if raceDetector {
		t.Skip("bounds time")
	}
	l := sharedConjunction(4000, 100)
	done := make(chan Report, 1)
	start := time.Now()
	go func() { done <- Backward(NewSource(l), "s.json", NewSource(l), "s.json") }()
	const limit = 5 * time.Second
	select {
	case r := <-done:
		if d := time.Since(start); d > limit {
			t.Fatalf("one check of a %d-byte schema took %v (> %v), verdict %s", len(l.files["s.json"]), d, limit, r.Verdict)
		}
		if r.Verdict == Compatible || !hasRule(r, "too_complex") {
			t.Fatalf("a check past its work bound is %s %+v, want too_complex", r.Verdict, r.Findings[:min(2, len(r.Findings))])
		}
	case <-time.After(limit):
		// The check goes on in the background until the test binary exits.
		t.Fatalf("one check of a %d-byte schema (100 references to a 4,000-part allOf) still runs after %v: flatten's cost is quadratic or outside the check's bounds", len(l.files["s.json"]), limit)
	}
}
