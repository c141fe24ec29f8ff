package main

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/keyfile"
)

// TestCompatOfAFileWhoseSchemaIsOverTheCompileBytesParsesItNot: the
// attack: a signed bundle file (not yet imported: compat is how one looks
// at it first) carries a schema a little over
// offlineschema.MaxCompileBytes, of small values. No compile loads it,
// and the checker refuses it from its size, yet before SCHEMA-12 compat
// parsed it whole for its $id (offlineschema.SchemaID: about 200 MB for
// 4 MiB of empty objects). Expected: the $id is refused from the
// length (invalid_schema, unparsed), so reading the file costs a small
// multiple of its bytes, and the versions that use the schema are
// unknown, unreadable_schema, never compatible.
func TestCompatOfAFileWhoseSchemaIsOverTheCompileBytesParsesItNot(t *testing.T) {
	head := `{"$id":"https://example.com/over","enum":[{}`
	doc := []byte(head + strings.Repeat(`,{}`, (offlineschema.MaxCompileBytes-len(head))/3+1) + `]}`)
	keyPEM, err := os.ReadFile(filepath.Join(testdata, "keys", "TEST-ONLY-example-publisher.key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := keyfile.ParsePrivate(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	d := &bundle.Draft{BundleID: "org.example.over", Version: 1, CreatedAt: cliNow.Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("over.json", bundle.MediaTypeSchema, doc),
			bundle.BytesSource("small.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))}}
	for _, v := range []string{"1.0.0", "2.0.0"} {
		ver, _ := capability.ParseVersion(v)
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: "org.example.over.c", Version: ver,
			InputSchema: capability.SchemaRef{ArtifactKey: "small.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "over.json"}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{k.Ed25519}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "over.ampb")
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &cliutil.Env{Stdout: io.Discard, Stderr: io.Discard, Now: func() time.Time { return cliNow }}
	var ps []compat.Provided
	grew := testalloc.Least(func() { ps, err = compatFromFile(env, path, []string{samplePub("example-publisher")}) })
	if err != nil {
		t.Fatal(err)
	}
	if limit := uint64(2 * file.Len()); !testalloc.Race && grew > limit {
		t.Fatalf("reading a %d-byte bundle file whose schema is over the compile limit allocated %d bytes, over %d: the schema was parsed",
			file.Len(), grew, limit)
	}
	ms := compat.Matrices(ps)
	if len(ms) != 1 || len(ms[0].Cells) != 4 {
		t.Fatalf("matrices %+v", ms)
	}
	for _, c := range ms[0].Cells {
		if c.Level != compat.LevelUnknown || len(c.Output.Findings) == 0 || c.Output.Findings[0].Rule != "unreadable_schema" {
			t.Fatalf("%s × %s is %s (%+v); want unknown, unreadable_schema", c.Requester, c.Provider, c.Level, c.Output.Findings)
		}
	}
}
