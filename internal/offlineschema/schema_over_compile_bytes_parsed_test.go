package offlineschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// overCompileBytesDoc is a JSON object with an absolute "$id" and just
// over MaxCompileBytes of empty objects: parsed, each is a map (about
// 60 MB of heap for the document).
func overCompileBytesDoc() []byte {
	head := `{"$id":"https://example.com/over","enum":[{}`
	n := (MaxCompileBytes-len(head))/3 + 1
	return []byte(head + strings.Repeat(`,{}`, n) + `]}`)
}

// TestASchemaOverTheCompileBytesIsRefusedBeforeItsParse: the attack: a
// schema artifact a little over MaxCompileBytes, of small values. No
// compile loads it, yet before SCHEMA-12 SchemaID, Prepare and
// QuickCheck.Add parsed it whole first (each of its 1.4 million empty
// objects a map, about 60 MB), and the guard against that sat in three
// callers in resolver/ only, so the catalog and `ampbundle compat` parsed
// such a document whatever its size. Expected: each refuses it from its
// length, invalid_schema, unparsed; Check still gives Compile's verdict.
func TestASchemaOverTheCompileBytesIsRefusedBeforeItsParse(t *testing.T) {
	doc := overCompileBytesDoc()
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"SchemaID", func() error { _, err := SchemaID(doc); return err }},
		{"Prepare", func() error { _, err := NewQuickCheck().Commit(Prepare("s.json", doc)); return err }},
		{"QuickCheck.Add", func() error { _, err := NewQuickCheck().Add("s.json", doc); return err }},
		{"CheckCompileBytes", func() error { return CheckCompileBytes(doc) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			grew := testalloc.Least(func() { err = tc.run() })
			if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), "over a compile limit") {
				t.Fatalf("a schema document of %d bytes, over MaxCompileBytes, gave %v; want invalid_schema, over a compile limit", len(doc), err)
			}
			if !testalloc.Race && grew > 64<<10 {
				t.Fatalf("refusing a schema document of %d bytes, over MaxCompileBytes, allocated %d bytes: it was parsed first", len(doc), grew)
			}
		})
	}

	q := NewQuickCheck()
	_, _ = q.Add("s.json", doc)
	l := newLoader(map[string]string{"s.json": string(doc)})
	if err := q.Check(l, "s.json", Options{}); !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), "more than 4 MiB") {
		t.Fatalf("Check of a document over MaxCompileBytes gave %v; want Compile's refusal, over the 4 MiB limit", err)
	}
}

// TestASchemaOfExactlyTheCompileBytesKeepsItsID, a guard: the size
// refusal takes nothing within the limit.
func TestASchemaOfExactlyTheCompileBytesKeepsItsID(t *testing.T) {
	head, tail := `{"$id":"https://example.com/at","description":"`, `"}`
	doc := []byte(head + strings.Repeat("a", MaxCompileBytes-len(head)-len(tail)) + tail)
	if len(doc) != MaxCompileBytes {
		t.Fatalf("test document is %d bytes, want %d", len(doc), MaxCompileBytes)
	}
	if id, err := SchemaID(doc); err != nil || id != "https://example.com/at" {
		t.Fatalf("SchemaID of a document of exactly MaxCompileBytes = %q, %v", id, err)
	}
	if id, err := NewQuickCheck().Add("s.json", doc); err != nil || id != "https://example.com/at" {
		t.Fatalf("Add of a document of exactly MaxCompileBytes = %q, %v", id, err)
	}
}
