package schemagraph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// indexAlloc returns the Index of doc and the bytes Index allocated (the
// least of testalloc.Runs runs).
func indexAlloc(t *testing.T, doc []byte) (*Resource, uint64) {
	t.Helper()
	v, err := Parse(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var r *Resource
	a := testalloc.Least(func() { r = Index(v) })
	return r, a
}

// TestIndexCostUnderALongMemberNameIsLinear: a publisher ships a schema
// with one long member name (any unknown keyword is valid JSON Schema;
// under "properties" it is a schema position) whose object holds many
// small members. An Index that built the JSON pointer of every value it
// visited, ptr+"/"+token, before knowing whether the value declares
// anything, copied the long name once per member: quadratic in the
// document (a 2 MiB name over 200,000 members, within compat's 4 MiB
// document bound, is about 400 GB; compat indexes on the first
// "$ref":"#anchor" into the document). Index keeps the path as tokens,
// visits no scalar and builds a pointer only for what it records. Here a
// 64 KiB name over 20,000 members (a 300 KB document) allocated more than
// a gigabyte; it must cost less than 64 times the document.
func TestIndexCostUnderALongMemberNameIsLinear(t *testing.T) {
	long := strings.Repeat("k", 64<<10)
	for _, c := range []struct{ name, open, member, close string }{
		{"unknown keyword of scalars", `{"$anchor":"a","` + long + `":{`, `"m%05d":0`, `}}`},
		{"properties of schemas", `{"$anchor":"a","properties":{"` + long + `":{"properties":{`, `"m%05d":{"type":"string"}`, `}}}}`},
	} {
		var b strings.Builder
		b.WriteString(c.open)
		for i := range 20000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, c.member, i)
		}
		b.WriteString(c.close)
		doc := []byte(b.String())
		r, alloc := indexAlloc(t, doc)
		t.Logf("%s: %d bytes allocated for a %d-byte document", c.name, alloc, len(doc))
		if p, ok := r.Anchors["a"]; !ok || p != "" {
			t.Fatalf("%s: anchor a at %q (%v), want the root", c.name, p, ok)
		}
		if bound := uint64(64 * len(doc)); alloc > bound {
			t.Fatalf("%s: Index of a %d-byte document allocated %d bytes (> %d = 64 × its size): the cost of a pointer per value is quadratic in the document", c.name, len(doc), alloc, bound)
		}
	}
}

// TestIndexOfManyAnchorsUnderALongNameIsBounded: the pointers Index
// records are its output, and many anchors under one long member name
// would each copy the name (3,000 anchors under a 1 MiB name: 3 GB). The
// pointer text of one Index is bounded by MaxIndexPointerBytes: beyond
// it the anchors are left out (a reference to one is then unresolved,
// never resolved elsewhere), the Resource says Partial, and their names
// still count, so a name declared twice is still a duplicate.
func TestIndexOfManyAnchorsUnderALongNameIsBounded(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	var b strings.Builder
	b.WriteString(`{"$anchor":"root","properties":{"` + long + `":{"$defs":{`)
	for i := range 3000 {
		fmt.Fprintf(&b, `"d%05d":{"$anchor":"x%05d"},`, i, i)
	}
	b.WriteString(`"z":{"$dynamicAnchor":"x00000"}}}}}`)
	doc := []byte(b.String())
	r, alloc := indexAlloc(t, doc)
	t.Logf("%d bytes allocated for a %d-byte document", alloc, len(doc))
	if bound := uint64(64*len(doc) + 2*MaxIndexPointerBytes); alloc > bound {
		t.Fatalf("Index of a %d-byte document allocated %d bytes (> %d)", len(doc), alloc, bound)
	}
	if !r.Partial || r.Anchors["root"] != "" {
		t.Fatalf("partial %v, root anchor %q", r.Partial, r.Anchors["root"])
	}
	n := 0
	for name, p := range r.Anchors {
		if name == "root" {
			continue
		}
		n++
		if want := "/properties/" + long + "/$defs/d" + name[1:]; p != want {
			t.Fatalf("anchor %q at a pointer of %d bytes, not its subschema", name, len(p))
		}
	}
	if n == 0 || n >= 3000 {
		t.Fatalf("%d of 3000 anchors recorded, want some and not all", n)
	}
	if _, ok := r.DynamicAnchors["x00000"]; ok || len(r.Duplicates) != 1 || r.Duplicates[0] != "x00000" {
		t.Fatalf("past the bound: dynamic %v, duplicates %v", r.DynamicAnchors, r.Duplicates)
	}
}
