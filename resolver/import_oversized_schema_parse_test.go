package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// flatSchemaBundle is a bundle org.example.flat whose one capability's
// input schema is a document of about size bytes, one array of empty
// objects ({"a":[{},{},...]}): valid JSON, about 47 times its bytes once
// parsed into a tree.
func flatSchemaBundle(t testing.TB, size int) []byte {
	t.Helper()
	var doc bytes.Buffer
	doc.WriteString(`{"a":[`)
	for doc.Len() < size {
		doc.WriteString(`{},`)
	}
	doc.WriteString(`{}]}`)
	id := "org.example.flat"
	in, out := "capabilities/"+id+".op/1.0.0/input.schema.json", "capabilities/"+id+".op/1.0.0/output.schema.json"
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	d.Artifacts = append(d.Artifacts, bundle.BytesSource(in, bundle.MediaTypeSchema, doc.Bytes()),
		bundle.BytesSource(out, bundle.MediaTypeSchema, []byte(`{"type":"object"}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: id + ".op", Version: v,
		InputSchema: capability.SchemaRef{ArtifactKey: in}, OutputSchema: capability.SchemaRef{ArtifactKey: out}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{sampleKey(t, "example-publisher")}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAnImportWhoseSchemaIsTooLargeToCompileIsRefusedUnparsed
//
// Attack: a publisher's signed bundle (or one of any signer a store
// trusts) carries a schema artifact far over offlineschema.MaxCompileBytes
// (4 MiB), up to Options.MaxArtifactSize (256 MiB by default): a flat
// array of empty objects. Such a schema never compiles, so the import is
// refused schema_not_offline; but before the refusal the import parsed
// the whole document twice into a tree, for its $id (SchemaID, stagedOf)
// and for the quick pass (QuickCheck.Add), with no bound or charge:
// about 47 times its bytes each (an 8 MiB document: about 760 MiB; a
// 256 MiB one: about 24 GB), in the process that serves every peer.
//
// Defence (docs/SPEC-DECISIONS.md STORE-7): a schema artifact over
// MaxCompileBytes is parsed by neither; its compile refuses it from its
// size, so the verdict is the one it was (schema_not_offline, the
// compile's message). Bound: the refused import allocates less than 8
// times the document's bytes (before: about 95 times).
func TestAnImportWhoseSchemaIsTooLargeToCompileIsRefusedUnparsed(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	const size = 8 << 20
	data := flatSchemaBundle(t, size)
	var err error
	n := testalloc.Least(func() {
		s := newStore(t) // a store of its own each run (closed and checked at cleanup): a refusal is audited
		_, err = importBytes(t, s, data, ImportOptions{})
	})
	t.Logf("the refused import of a %d-byte schema allocated %d bytes", size, n)
	if !errors.Is(err, ErrSchemaNotOffline) {
		t.Fatalf("import of a schema over %d bytes: %v, want %s", offlineschema.MaxCompileBytes, err, ErrSchemaNotOffline)
	}
	if n > 8*size {
		t.Fatalf("the refused import of a %d-byte schema allocated %d bytes: the document was parsed", size, n)
	}
}
