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
func TestSameLeafWalkIsChargedToTheCheck(t *testing.T) {
	if raceDetector {
		t.Skip("bounds time")
	}
	doc := sharedLeafSchema(1000, 1<<20)
	l := memLoader{files: map[string][]byte{"old.json": []byte(doc), "new.json": []byte(doc)}}
	// Parsing the two documents (linear, once per Source: about 0.3 s
	// each here, seconds on a loaded machine) is not what is bounded.
	oldSrc, newSrc := NewSource(l), NewSource(l)
	for _, x := range []struct {
		s   *Source
		key string
	}{{oldSrc, "old.json"}, {newSrc, "new.json"}} {
		if _, e := x.s.s.load(x.key); e != "" {
			t.Fatal(e)
		}
	}
	done := make(chan Report, 1)
	start := time.Now()
	go func() { done <- Backward(oldSrc, "old.json", newSrc, "new.json") }()
	const limit = 2 * time.Second
	select {
	case r := <-done:
		if d := time.Since(start); d > limit {
			t.Fatalf("one check of a %d-byte schema took %v (> %v), verdict %s", len(doc), d, limit, r.Verdict)
		}
	case <-time.After(limit):
		// The check goes on in the background until the test binary exits.
		t.Fatalf("one check of a %d-byte schema (1,000 references to a schema listing 2^20 values) still runs after %v: sameLeaf's walks are not charged to the check", len(doc), limit)
	}
}
