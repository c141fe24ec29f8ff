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
// each compares each duplicate with at most one listed name (a set
// lookup: dupCompared at most one per subschema), where searching the
// list compared it with every name listed before. The times of both
// Index runs are logged (the distinct names are the twin).
func TestAnchorDuplicateFloodCostsLinearTime(t *testing.T) {
	measure := func(per int) (time.Duration, *Resource) {
		v, err := Parse(floodDoc(64000, per), Options{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := Index(v)
		return time.Since(start), r
	}
	distinct, r := measure(1)
	if len(r.Duplicates) != 0 || len(r.Anchors) != 64000 {
		t.Fatalf("distinct names: %d duplicates, %d anchors", len(r.Duplicates), len(r.Anchors))
	}
	twice, r := measure(2)
	if len(r.Duplicates) != 32000 || r.Duplicates[0] != "a000000" || r.Duplicates[31999] != "a031999" {
		t.Fatalf("%d duplicates listed, want each of 32000 names once in the order found", len(r.Duplicates))
	}
	t.Logf("distinct names: %v; each twice: %v, %d names compared", distinct, twice, r.dupCompared)
	if r.dupCompared > 64000 {
		t.Fatalf("Index of 32,000 names declared twice compared %d listed names, want at most one per subschema (64,000): each duplicate searches the list", r.dupCompared)
	}
}
