package catalog

import (
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestACatalogSchemaOverTheCompileBytesIsRefusedBeforeItsParse: the
// attack: a schema the catalog reads (a store written before import
// checked compiles, or altered, or a Loader's) a little over
// offlineschema.MaxCompileBytes, of small values. No compile loads it,
// yet before SCHEMA-12 the read parsed it whole for its $id
// (offlineschema.SchemaID: about 200 MB for 4 MiB of empty objects) and
// walked its tokens for its $refs, at every read of the model. Expected:
// the read keeps it as unreadable, invalid_schema, from its length
// alone (offlineschema.CheckCompileBytes), with no $id, text or refs.
func TestACatalogSchemaOverTheCompileBytesIsRefusedBeforeItsParse(t *testing.T) {
	head := `{"$id":"https://example.com/over","enum":[{}`
	doc := []byte(head + strings.Repeat(`,{}`, (offlineschema.MaxCompileBytes-len(head))/3+1) + `]}`)
	m := &Model{schemas: map[SchemaLoc]Schema{}}
	loc := SchemaLoc{BundleID: "org.hostile", Key: "over.json"}
	opts := ReadOptions{MaxSchemaBytes: DefaultMaxSchemaBytes}
	grew := testalloc.Least(func() { m.keepSchema(loc, doc, nil, opts) })
	s := m.schemas[loc]
	if s.Err != string(offlineschema.ErrInvalidSchema) || s.ID != "" || s.Text != nil || s.refs != nil {
		t.Fatalf("a schema of %d bytes, over the compile limit, was kept as Err %q, $id %q, %d bytes of text, %d refs; want invalid_schema and nothing read",
			len(doc), s.Err, s.ID, len(s.Text), len(s.refs))
	}
	if !testalloc.Race && grew > 64<<10 {
		t.Fatalf("keeping a schema of %d bytes, over the compile limit, allocated %d bytes: it was parsed", len(doc), grew)
	}

	// A guard: a schema within the limit is kept as before.
	small := []byte(`{"$id":"https://example.com/small","$ref":"other.json"}`)
	m.keepSchema(loc, small, nil, opts)
	if s := m.schemas[loc]; s.Err != "" || s.ID != "https://example.com/small" || len(s.refs) != 1 {
		t.Fatalf("a small schema was kept as Err %q, $id %q, %d refs", s.Err, s.ID, len(s.refs))
	}
}
