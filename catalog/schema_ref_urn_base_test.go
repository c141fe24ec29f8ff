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
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// refLinkBundle is a store holding one bundle whose capability's input
// schema is s.json, with the other artifacts given, and the handler over it.
func refLinkBundle(t *testing.T, files map[string]string) http.Handler {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	var srcs []bundle.Source
	for _, k := range []string{"s.json", "b.json", "real.json"} {
		if doc, ok := files[k]; ok {
			srcs = append(srcs, bundle.BytesSource(k, bundle.MediaTypeSchema, []byte(doc)))
		}
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: srcs,
		Capabilities: []capability.Descriptor{{Name: "org.hostile.ref", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}},
	}, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return newHandler(t, newStore(t, file.Bytes()))
}

// catalogMemLoader serves files from memory for the offline compiler, with
// each root "$id" mapped to its key.
type catalogMemLoader map[string]string

func (l catalogMemLoader) Load(key string) ([]byte, error) {
	if s, ok := l[key]; ok {
		return []byte(s), nil
	}
	return nil, http.ErrMissingFile
}

func (l catalogMemLoader) KeyForID(id string) (string, bool) {
	for k, doc := range l {
		if schemaID([]byte(doc)) == id {
			return k, true
		}
	}
	return "", false
}

// TestRefAgainstURNBaseLinksWhatTheValidatorLoads: the catalog resolved a
// "$ref" with net/url's ResolveReference against the root "$id", then as
// a path beside the artifact's key, where the validator (jsonschema
// v5.3.1's resolveURL) appends a relative reference to a "urn:" base and
// reads no "$id" beside "$ref" up to draft-07. So the schema page linked,
// and the catalog kept and showed as the referenced schema, a decoy
// artifact (b.json, accepting integers) while the validator loads
// another (real.json, accepting strings): a reader of the page was shown
// a contract the agent does not enforce. Should be: the page links, and
// the model follows, the artifact the validator loads.
func TestRefAgainstURNBaseLinksWhatTheValidatorLoads(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
	}{
		{"urn base", map[string]string{
			"s.json":    `{"$id":"urn:example:root","type":"object","properties":{"p":{"$ref":"b.json"}}}`,
			"b.json":    `{"type":"integer"}`,
			"real.json": `{"$id":"urn:example:rootb.json","type":"string"}`,
		}},
		{"draft-07 $id beside $ref", map[string]string{
			"s.json":    `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"https://schemas.example.com/a/s.json","$ref":"real.json"}`,
			"b.json":    `{"$id":"https://schemas.example.com/a/real.json","type":"object","properties":{"p":{"type":"integer"}}}`,
			"real.json": `{"type":"object","properties":{"p":{"type":"string"}}}`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sch, err := offlineschema.Compile(catalogMemLoader(c.files), "s.json", offlineschema.Options{})
			if err != nil {
				t.Fatalf("the validator does not compile s.json: %v", err)
			}
			inst, _ := offlineschema.ValueFromJSON([]byte(`{"p":"x"}`))
			if err := sch.Validate(inst); err != nil {
				t.Fatalf("the validator refuses {\"p\":\"x\"}, so it did not load real.json: %v", err)
			}
			h := refLinkBundle(t, c.files)
			_, page := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=s.json")
			if strings.Contains(page, `k=b.json`) {
				t.Errorf("the page links the $ref to b.json, which the validator never loads")
			}
			if !strings.Contains(page, `k=real.json`) {
				t.Errorf("the page does not link the $ref to real.json, which the validator loads")
			}
		})
	}
}

// TestRefEntriesCarryTheValidatorsBaseChain: each ref entry carries the
// "$id"s the validator resolves it through (none beside "$ref" in
// draft-07), and a chain past maxRefIDs or maxRefIDBytes, or a document
// of a draft the catalog does not read that declares any "$id", leaves
// the reference unresolved (""), so that a long "$id" repeated over many
// references costs its length once.
func TestRefEntriesCarryTheValidatorsBaseChain(t *testing.T) {
	deep := strings.Repeat(`{"$id":"d/","not":`, maxRefIDs+1) + `{"$ref":"x.json"}` + strings.Repeat(`}`, maxRefIDs+1)
	long := `{"$id":"urn:` + strings.Repeat("a", maxRefIDBytes) + `","allOf":[{"$ref":"x.json"},{"$ref":"y.json"}]}`
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"no $id", `{"properties":{"p":{"$ref":"a.json"}}}`, []string{"a.json"}},
		{"root and embedded", `{"$id":"urn:r","properties":{"p":{"$id":"e/","not":{"$ref":"a.json"}},"q":{"$ref":"b.json"}}}`,
			[]string{"urn:r\x00e/\x00a.json", "urn:r\x00b.json"}},
		{"draft-07 $id beside $ref", `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"https://e.com/a/","$ref":"a.json","definitions":{"d":{"$ref":"b.json"}}}`,
			[]string{"a.json", "b.json"}},
		{"unknown draft with an $id", `{"$schema":"http://json-schema.org/draft-04/schema#","id":"https://e.com/","properties":{"p":{"$ref":"a.json"}}}`, []string{""}},
		{"$id not a string", `{"$id":1,"$ref":"a.json"}`, []string{""}},
		{"chain too deep", deep, []string{""}},
		{"chain too long", long, []string{"", ""}},
	} {
		if got := refsOf([]byte(c.doc)); !slices.Equal(got, c.want) {
			t.Errorf("%s: entries %q, want %q", c.name, got, c.want)
		}
	}
}
