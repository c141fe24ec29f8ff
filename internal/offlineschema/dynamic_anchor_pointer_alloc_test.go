package offlineschema

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// A peer's schema that declares a "$dynamicAnchor" and holds, under one
// 64 KiB member name, 20,000 small members: building the JSON pointer of
// every value by concatenation costs the long name once per member,
// about 1.5 GB for a 285 KB document. Compile must allocate in
// proportion to the document.
func TestDynamicAnchorPointerAllocationIsLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"$dynamicAnchor": "node", "`)
	b.WriteString(strings.Repeat("n", 64<<10))
	b.WriteString(`": {`)
	for i := range 20000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strconv.Itoa(i) + `":0`)
	}
	b.WriteString(`}}`)
	doc := b.String()
	l := newLoader(map[string]string{"s.json": doc})
	if _, err := Compile(l, "s.json", Options{}); err != nil {
		t.Fatalf("compile: %v", err)
	}
	var err error
	got := testalloc.Least(func() { _, err = Compile(l, "s.json", Options{}) })
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if limit := uint64(64 * len(doc)); got > limit {
		t.Fatalf("Compile of a %d-byte document allocated %d bytes, over %d", len(doc), got, limit)
	}
}

// A document of many "$dynamicAnchor" subschemas under one long member
// name: the pointers recorded would hold the name once each. They are
// bounded; past the bound the targets count as unknown (every dynamic
// reference then costs the most), never as absent.
func TestDynamicAnchorPointerTextIsBounded(t *testing.T) {
	long := strings.Repeat("n", 64<<10)
	var b strings.Builder
	b.WriteString(`{"$defs": {"` + long + `": {"$defs": {`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"d` + strconv.Itoa(i) + `": {"$dynamicAnchor": "a` + strconv.Itoa(i) + `"}`)
	}
	b.WriteString(`}}}}`)
	ptrs, ok := dynamicAnchorPointers(parseForMeasure([]byte(b.String())))
	if ok {
		t.Fatalf("recorded %d pointers of about %d bytes each without reporting the bound", len(ptrs), len(long))
	}
	total := 0
	for _, p := range ptrs {
		total += len(p)
	}
	if total > maxDynamicAnchorPointerBytes {
		t.Fatalf("recorded %d bytes of pointers, over %d", total, maxDynamicAnchorPointerBytes)
	}
}
