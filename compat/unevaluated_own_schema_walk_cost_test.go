package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// ownSchemaFanout is one schema document whose root is an allOf of heads
// parts, each {"$ref":"#/$defs/big","unevaluatedProperties":{}}, where
// "$defs/big" is an allOf of parts distinct subschemas; the root lists
// props property names. Each head is a distinct node, so ownSchema
// flattens big once per head (charged), and evaluatedIn then walks every
// head's own schema again for every property name (charged to nothing).
func ownSchemaFanout(heads, parts, props int) string {
	var big []string
	for i := range parts {
		big = append(big, fmt.Sprintf(`{"minimum":%d}`, -i))
	}
	var hs []string
	for range heads {
		hs = append(hs, `{"$ref":"#/$defs/big","unevaluatedProperties":{}}`)
	}
	var ps []string
	for i := range props {
		ps = append(ps, fmt.Sprintf(`"p%05d":{}`, i))
	}
	return `{"type":"object","properties":{` + strings.Join(ps, ",") + `},"allOf":[` + strings.Join(hs, ",") +
		`],"$defs":{"big":{"allOf":[` + strings.Join(big, ",") + `]}}}`
}

// TestOwnSchemaWalkPerNameIsCharged
//
// Attack (cost): review 56 made unevaluatedProperties judge its own
// schema (ownSchema, compat/objects.go), flattened once per head node and
// cached; but evaluatedIn walks that whole own schema again for every
// member name of the check, on both sides, and that walk is charged to
// nothing. A publisher ships one schema (as both versions, or any two
// sharing it) whose root is an allOf of 45 heads, each
// {"$ref":"#/$defs/big","unevaluatedProperties":{}}, with "$defs/big" a
// 4,000-part allOf (45 × 4,000 flattened parts: under MaxValueWork), and
// lists 300 property names: every name walks 180,000 parts a side.
//
// Today: 5 to 8 s of CPU (by load) for one check of a 75 KB document, 64 s
// with 3,000 names (106 KB), 98% of it in evaluatedIn's map lookups
// (compat/objects.go, the loop over own.parts, called per name and part
// from propertyPartsUnc): at import and in every catalog or matrix check.
//
// Want: the walk is charged to the check's work (or its result kept per
// head and name class), so that the check ends within its bounds (Unknown
// too_complex, or decided) in well under 2 s.
//
// Should: the check ends on its bound (Unknown, too_complex), and the own
// schema's parts evaluatedIn passes over in all (checker.ownWalked) stay
// within what MaxValueWork pays for, valuesPerStep a unit (uncharged, 300
// names × 45 heads × 4,001 parts a side: 108 million). The time is
// logged (a busy machine cannot decide a bound on it).
func TestOwnSchemaWalkPerNameIsCharged(t *testing.T) {
	doc := ownSchemaFanout(45, 4000, 300)
	l := memLoader{files: map[string][]byte{"s.json": []byte(doc)}}
	c := &checker{a: NewSource(l).s, b: NewSource(l).s, memo: map[string]int{}, assumed: maxInt}
	start := time.Now()
	r := c.run("s.json", "s.json") // Backward(NewSource(l), "s.json", NewSource(l), "s.json")
	took := time.Since(start)
	bound := MaxValueWork * valuesPerStep
	t.Logf("one check of a %d KB schema: %s, %d own-schema parts walked (bound %d), %d units of work, %v", len(doc)/1024, r.Verdict, c.ownWalked, bound, c.work, took)
	if c.ownWalked > bound {
		t.Errorf("one check of a %d KB schema walked %d parts of own schemas, want at most %d: the walk per name is not charged to the check's work", len(doc)/1024, c.ownWalked, bound)
	}
	if r.Verdict != Unknown || !hasRule(r, "too_complex") {
		t.Errorf("the check's verdict is %s without a too_complex finding: the walk per name was not charged to the check's work", r.Verdict)
	}
}
