package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// sharedLeafSchema is one schema document whose props properties each
// "$ref" "#/$defs/b", an object schema whose one property "y" lists
// values numbers: every property pair of a check compares "y" again.
func sharedLeafSchema(props, values int) string {
	var ps []string
	for i := range props {
		ps = append(ps, fmt.Sprintf(`"p%05d":{"$ref":"#/$defs/b"}`, i))
	}
	enum := "[" + strings.Repeat("0,", values-1) + "0]"
	return `{"type":"object","properties":{` + strings.Join(ps, ",") + `},"$defs":{"b":{"type":"object","properties":{"y":{"enum":` + enum + `}}}}}`
}

// TestSameLeafWalkIsChargedToTheCheck: a publisher ships a 2 MB
// schema (the same text as both versions, or any two versions sharing
// it) whose "$defs/b" has a property "y" listing a million values, and
// whose properties each "$ref" "#/$defs/b". Every property pair of the
// check flattens [p_i, b] (a new memo key per property) and compares "y"
// with subset, which calls sameLeaf before the memo: equal walks the
// million values, then containsRef walks them again, and neither is
// charged to MaxSteps or MaxValueWork (2 steps and ~4 units of work a
// property). Before COMPAT-10 was amended (review 53): 5 to 34 ms a
// property (by machine and load), 1,000 properties seconds, and the
// 9,000 the offline compiler still accepts (10,000 objects, 2.4 MB: it
// compiles that document) up to 5 minutes of CPU for one check, at
// import and in every catalog or matrix check. Should be: the values
// sameLeaf, equal and containsRef pass over are charged to the check's
// work (a unit per valuesPerStep, as listed values are) or their result
// is kept per node pair, so that the check ends within its bounds
// (Unknown too_complex, or a memoised Compatible) in well under 2 s.
//
// Should: the values sameLeaf's walks visit in the whole check
// (checker.leafWalked) stay within what MaxValueWork pays for,
// valuesPerStep a unit, and one cut-short walk's overshoot a step
// (uncharged, 1,000 properties walk 2^20 values twice each: two
// billion); the check is decided or too_complex, never incompatible. The
// time is logged (a busy machine cannot decide a bound on it).
func TestSameLeafWalkIsChargedToTheCheck(t *testing.T) {
	doc := sharedLeafSchema(1000, 1<<20)
	l := memLoader{files: map[string][]byte{"old.json": []byte(doc), "new.json": []byte(doc)}}
	// Parsing the two documents (linear, once per Source) is not what is
	// bounded.
	oldSrc, newSrc := NewSource(l), NewSource(l)
	for _, x := range []struct {
		s   *Source
		key string
	}{{oldSrc, "old.json"}, {newSrc, "new.json"}} {
		if _, e := x.s.s.load(x.key); e != "" {
			t.Fatal(e)
		}
	}
	c := &checker{a: oldSrc.s, b: newSrc.s, memo: map[string]int{}, assumed: maxInt}
	start := time.Now()
	r := c.run("old.json", "new.json") // Backward(oldSrc, "old.json", newSrc, "new.json")
	took := time.Since(start)
	bound := (MaxValueWork+1)*valuesPerStep + c.steps
	t.Logf("one check of a %d-byte schema: %s, %d values walked (bound %d), %d units of work, %d steps, %v", len(doc), r.Verdict, c.leafWalked, bound, c.work, c.steps, took)
	if c.leafWalked > bound {
		t.Errorf("one check of a %d-byte schema (1,000 references to a schema listing 2^20 values) walked %d values comparing leaves, want at most %d: sameLeaf's walks are not charged to the check",
			len(doc), c.leafWalked, bound)
	}
	if r.Verdict == Incompatible || (r.Verdict == Unknown && !hasRule(r, "too_complex")) {
		t.Errorf("a schema compared with itself is %s %+v, want compatible or too_complex", r.Verdict, r.Findings[:min(2, len(r.Findings))])
	}
}
