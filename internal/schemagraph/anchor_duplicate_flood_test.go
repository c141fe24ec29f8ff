package schemagraph

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// floodDoc is a schema of n subschemas under "$defs", each declaring an
// anchor: the name of subschema i is i/per, so per > 1 declares each name
// per times.
func floodDoc(n, per int) []byte {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"d%06d":{"$anchor":"a%06d"}`, i, i/per)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// TestAnchorDuplicateFloodCostsLinearTime: a publisher declares each of
// many anchor names twice. Listing a duplicate once must not search the
// list of duplicates found so far: that is quadratic in the names (32,000
// names twice, 5·10⁸ comparisons; 100,000 fit in the 4 MiB document
// bound). The Index of 64,000 subschemas naming 32,000 anchors twice
// each takes at most 5 times as long as that of as many subschemas each
// naming its own (the best of 3 runs each).
func TestAnchorDuplicateFloodCostsLinearTime(t *testing.T) {
	measure := func(per int) (time.Duration, *Resource) {
		v, err := Parse(floodDoc(64000, per), Options{})
		if err != nil {
			t.Fatal(err)
		}
		best := time.Duration(1 << 62)
		var r *Resource
		for range 3 {
			start := time.Now()
			r = Index(v)
			best = min(best, time.Since(start))
		}
		return best, r
	}
	distinct, r := measure(1)
	if len(r.Duplicates) != 0 || len(r.Anchors) != 64000 {
		t.Fatalf("distinct names: %d duplicates, %d anchors", len(r.Duplicates), len(r.Anchors))
	}
	twice, r := measure(2)
	if len(r.Duplicates) != 32000 || r.Duplicates[0] != "a000000" || r.Duplicates[31999] != "a031999" {
		t.Fatalf("%d duplicates listed, want each of 32000 names once in the order found", len(r.Duplicates))
	}
	t.Logf("distinct names: %v; each twice: %v", distinct, twice)
	if twice > 5*distinct {
		t.Fatalf("Index of 32,000 names declared twice took %v, of as many subschemas with distinct names %v: more than 5 times as long", twice, distinct)
	}
}
