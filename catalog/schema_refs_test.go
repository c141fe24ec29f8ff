package catalog

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// TestRefInDataDoesNotPullNonSchemaArtifact: a "$ref" inside "examples"
// (data, never followed by the compiler, so import accepts it) must not
// make the catalog load an application/octet-stream artifact that import
// never checked, show it as a schema and pretty-print it (nested arrays
// used to indent every line by depth: a 6 KB blob rendered ~18 MB).
func TestRefInDataDoesNotPullNonSchemaArtifact(t *testing.T) {
	const depth = 3000
	blob := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
	v, _ := capability.ParseVersion("1.0.0")
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{
			bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object","examples":[{"$ref":"blob.json"}]}`)),
			bundle.BytesSource("blob.json", "application/octet-stream", blob),
		},
		Capabilities: []capability.Descriptor{{Name: "org.hostile.blob", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}},
	}, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, newStore(t, file.Bytes()))
	if _, ok := h.Model().Schema(SchemaLoc{BundleID: "org.hostile", Key: "blob.json"}); ok {
		t.Errorf("a non-schema artifact named only by a $ref inside examples is kept as a schema")
	}
	res, body := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=blob.json")
	if res.StatusCode == http.StatusOK && len(body)/len(blob) > 64 {
		t.Errorf("a %d-byte artifact renders a %d-byte page (%dx)", len(blob), len(body), len(body)/len(blob))
	}
	_, page := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=s.json")
	if strings.Contains(page, `href="/ui/schema?b=org.hostile&amp;k=blob.json"`) {
		t.Errorf("a $ref inside examples is shown as a link")
	}
}

// TestRefsOutsideSchemaPositionsAreData: refsOf keeps the $refs the
// compiler follows (keywords whose values are schemas, by draft) and
// none inside data keywords or unknown keywords.
func TestRefsOutsideSchemaPositionsAreData(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"root", `{"$ref":"a.json"}`, []string{"a.json"}},
		{"properties", `{"properties":{"p":{"$ref":"a.json"}}}`, []string{"a.json"}},
		{"defs and allOf", `{"$defs":{"d":{"$ref":"a.json"}},"allOf":[{"$ref":"b.json"}]}`, []string{"a.json", "b.json"}},
		{"items and not", `{"items":{"$ref":"a.json"},"not":{"$ref":"b.json"}}`, []string{"a.json", "b.json"}},
		{"dependencies", `{"dependencies":{"a":["b"],"c":{"$ref":"a.json"}}}`, []string{"a.json"}},
		{"draft-07 items array", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$ref":"a.json"}]}`, []string{"a.json"}},
		{"draft-07 has no $defs", `{"$schema":"http://json-schema.org/draft-07/schema#","$defs":{"d":{"$ref":"a.json"}}}`, nil},
		{"examples", `{"examples":[{"$ref":"a.json"}]}`, nil},
		{"const", `{"const":{"$ref":"a.json"}}`, nil},
		{"enum", `{"enum":[{"$ref":"a.json"}]}`, nil},
		{"default", `{"default":{"$ref":"a.json"}}`, nil},
		{"unknown keyword", `{"x":{"$ref":"a.json"}}`, nil},
		{"a property named $ref", `{"properties":{"$ref":"a.json"}}`, nil},
		{"not a schema", `[{"$ref":"a.json"}]`, nil},
	} {
		if got := refsOf([]byte(c.doc)); !slices.Equal(got, c.want) {
			t.Errorf("%s: refs %q, want %q", c.name, got, c.want)
		}
	}
}
