package resolver

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// bundleOfManifestSize is a bundle of org.example.atcap whose signed
// manifest is exactly size bytes (size well above 64 KiB): one
// capability whose notes pad it. The CBOR heads of the notes and of the
// payload keep their length across the second build, so one correction
// lands it.
func bundleOfManifestSize(t *testing.T, size int) []byte {
	t.Helper()
	build := func(notes int) ([]byte, int) {
		v, _ := capability.ParseVersion("1.0.0")
		d := &bundle.Draft{BundleID: "org.example.atcap", Version: 1, CreatedAt: testNow.Add(-time.Hour),
			Artifacts: []bundle.Source{bundle.BytesSource("schemas/in.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))},
			Capabilities: []capability.Descriptor{{Name: "org.example.atcap.c", Version: v, Notes: strings.Repeat("n", notes),
				InputSchema:  capability.SchemaRef{ArtifactKey: "schemas/in.schema.json"},
				OutputSchema: capability.SchemaRef{ArtifactKey: "schemas/in.schema.json"}}}}
		var buf bytes.Buffer
		if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{sampleKey(t, "example-publisher")}, bundle.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		in, err := bundle.Inspect(bytes.NewReader(buf.Bytes()), 0)
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), len(in.SignedManifest)
	}
	_, got := build(1 << 20)
	data, got := build(1<<20 + size - got)
	if got != size {
		t.Fatalf("the signed manifest is %d bytes, want %d", got, size)
	}
	return data
}

// TestABundleWhoseManifestIsExactlyTheCapIsExportedAndChecked: a
// publisher may sign a manifest of exactly bundle.DefaultMaxManifestSize
// (16 MiB), which the store imports; export and the store check read the
// stored copy with a cap one byte over its length, which BUNDLE-33 made
// the bundle reader refuse above the default: the bundle was left out of
// every mirror snapshot and reported as undecodable, so /readyz answered
// 503 for a bundle that verifies.
func TestABundleWhoseManifestIsExactlyTheCapIsExportedAndChecked(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, bundleOfManifestSize(t, bundle.DefaultMaxManifestSize))
	if err := s.Export("org.example.atcap", io.Discard); err != nil {
		t.Fatalf("export: %v", err)
	}
	problems, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("check: %v", problems)
	}
}
