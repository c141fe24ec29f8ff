package capability

import (
	"slices"
	"testing"
)

// TestComparatorsReadWhatContainsReads: a caller that finds covered
// versions by spans (compat, COMPAT-11) once parsed each range's string
// again with its own reader, a second grammar that could drift from
// ParseRange's; Comparators hands it what ParseRange read, in order,
// with the operator of a bare version spelled "=".
func TestComparatorsReadWhatContainsReads(t *testing.T) {
	r, err := ParseRange("  >=1.2.3-alpha   <2.0.0 =1.5.0 >1.0.0 <=3.0.0 1.5.0")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range r.Comparators() {
		got = append(got, c.Op+c.Version.String())
	}
	want := []string{">=1.2.3-alpha", "<2.0.0", "=1.5.0", ">1.0.0", "<=3.0.0", "=1.5.0"}
	if !slices.Equal(got, want) {
		t.Fatalf("Comparators = %q, want %q", got, want)
	}
	pre, _ := ParseVersion("1.2.3-rc.1")
	rel, _ := ParseVersion("1.2.3")
	other, _ := ParseVersion("1.2.4")
	if !pre.HasPrerelease() || rel.HasPrerelease() || !pre.SameCore(rel) || pre.SameCore(other) {
		t.Fatal("HasPrerelease or SameCore")
	}
	if len((Range{}).Comparators()) != 0 {
		t.Fatal("the zero Range has comparators")
	}
}
