package catalog

import (
	"strings"
	"testing"
)

// FuzzSchemaPrettyPrinter: any bytes as a schema (the publisher writes
// them) pretty-print without a panic, and the pieces, put back together,
// hold every string of the document; refsOf stays within its bound, and
// the rendering is linear in the document (at most 64 bytes a byte) and
// within MaxRenderBytes.
func FuzzSchemaPrettyPrinter(f *testing.F) {
	f.Add([]byte(hostileSchema))
	f.Add([]byte(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"other.json#/x~1y"}},"items":[{"$ref":"#/items/0"}]}`))
	f.Add([]byte(`[1,2,{"a":null,"b":true}]`))
	f.Add([]byte(`{"a":`))
	f.Add([]byte("\xff\xfe"))
	f.Add([]byte(`{"examples":[{"$ref":"x.json"}],"a":[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		m := &Model{schemas: map[SchemaLoc]Schema{}}
		s := Schema{Loc: SchemaLoc{BundleID: "b", Key: "k.json"}, Text: doc}
		m.schemas[s.Loc] = s
		if refs := refsOf(doc); len(refs) > maxRefs {
			t.Fatalf("%d refs", len(refs))
		}
		var b strings.Builder
		size := 0
		for _, tok := range m.pretty(s, "s") {
			size += len(tok.Text) + len(tok.ID) + len(tok.Href)
			b.WriteString(tok.Text)
			if tok.Href != "" && !strings.HasPrefix(tok.Href, "#s-") && !strings.HasPrefix(tok.Href, "/ui/schema?") {
				t.Fatalf("a link outside the catalog: %q", tok.Href)
			}
		}
		if size > 64*len(doc)+64 || size > MaxRenderBytes {
			t.Fatalf("a %d-byte document renders %d bytes", len(doc), size)
		}
		if b.Len() == 0 && len(doc) > 0 {
			t.Fatal("the document vanished")
		}
	})
}
