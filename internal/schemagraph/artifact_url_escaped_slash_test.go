package schemagraph_test

import (
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// TestArtifactURLSpeltOtherwiseNamesNoArtifact: the validator (jsonschema
// v5.3.1) keeps a resource under the URL text a reference resolves to
// and resolves the relative references inside it against that text. A
// reference "sub%2Fx.json" resolves to "ampbundle:///sub%2Fx.json",
// whose path net/url decodes to the artifact key "sub/x.json"; the
// validator then resolves "y.json" inside it to the artifact "y.json"
// (the escaped slash is no segment), while a reader taking the key's own
// URL, ArtifactURL("sub/x.json"), as its base resolves it to
// "sub/y.json": two readers, two schemas. ArtifactKey names an artifact
// only by a URL whose segments are its key's, so such a URL names no
// artifact (the offline loader, compat and the catalog refuse it).
func TestArtifactURLWithAnEscapedSlashNamesNoArtifact(t *testing.T) {
	docs := map[string]string{
		"root.json":  `{"$ref":"sub%2Fx.json"}`,
		"sub/x.json": `{"$ref":"y.json"}`,
		"y.json":     `{"type":"string"}`,
		"sub/y.json": `{"type":"integer"}`,
	}
	// The premise, with a loader that names artifacts by net/url's
	// decoded path alone (ArtifactKey's rule before): the validator
	// enforces "y.json" where the key's URL leads to "sub/y.json".
	var asked []string
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		asked = append(asked, s)
		u, err := url.Parse(s)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader(docs[strings.TrimPrefix(u.Path, "/")])), nil
	}
	sch, err := c.Compile(schemagraph.ArtifactURL("root.json"))
	if err != nil {
		t.Fatalf("premise: %v", err)
	}
	if sch.Validate("s") != nil || sch.Validate(5) == nil {
		t.Fatalf("premise: the validator does not enforce y.json (asked %q)", asked)
	}
	u, _, err := schemagraph.Resolve(schemagraph.ArtifactURL("sub/x.json"), "y.json")
	if err != nil || u.String() != schemagraph.ArtifactURL("sub/y.json") {
		t.Fatalf("premise: the key's own URL resolves y.json to %v (%v)", u, err)
	}

	for _, s := range []string{"ampbundle:///sub%2Fx.json", "ampbundle:///sub%2fx.json",
		"ampbundle:///a/sub%2Fx.json", "ampbundle:///sub%2F%2E%2E%2Fx.json"} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := schemagraph.ArtifactKey(u); ok {
			t.Errorf("ArtifactKey(%q) = %q, true: the validator's base is not ArtifactURL(%q)", s, k, k)
		}
	}
	// A spelling with the key's segments still names it (its references
	// resolve alike; SCHEMA-6 counts its anchors once per spelling).
	for s, key := range map[string]string{"ampbundle:///%73ub/x.json": "sub/x.json",
		"ampbundle:///sub/x%2Ejson": "sub/x.json", "ampbundle:/sub/x.json": "sub/x.json",
		"ampbundle:///a%252Fb.json": "a%2Fb.json"} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := schemagraph.ArtifactKey(u); !ok || k != key {
			t.Errorf("ArtifactKey(%q) = %q, %v; want %q", s, k, ok, key)
		}
	}
	// Each key's own URL still names it, escapes net/url writes included.
	for _, key := range []string{"sub/x.json", "a b.json", "caf\u00e9/%.json", "a;b/c=d.json"} {
		u, err := url.Parse(schemagraph.ArtifactURL(key))
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := schemagraph.ArtifactKey(u); !ok || k != key {
			t.Errorf("ArtifactKey(ArtifactURL(%q)) = %q, %v", key, k, ok)
		}
	}
}
