package catalog

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// TestRefToTheDocumentsOwnResourceIsNotLinkedElsewhere: the
// validator (jsonschema v5.3.1, compileRef) looks a reference's target
// up among the resources of the document holding it (its root, named by
// its root "$id" once read, and every subschema with an "$id" in a place
// the library lists, "additionalItems" of a 2020-12 document included)
// before it loads any artifact. The catalog resolved the URL and took a
// synthetic URL for the artifact of that key, any other for the artifact
// declaring it as root "$id": with a relative root "$id" ("b.json"), an
// embedded "$id":"b.json", or an embedded "$id":"urn:x" that artifact
// b.json also declares, the page linked the reference to b.json (a decoy
// accepting integers) while the agent enforces the document's own
// subschema (strings). Should be: no link to b.json (the document's own
// place, or no link where the catalog cannot tell which).
func TestRefToTheDocumentsOwnResourceIsNotLinkedElsewhere(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
	}{
		{"relative root $id", map[string]string{
			"s.json": `{"$id":"b.json","type":"object","properties":{"p":{"$ref":"#/$defs/t"}},"$defs":{"t":{"type":"string"}}}`,
			"b.json": `{"$defs":{"t":{"type":"integer"}}}`,
		}},
		{"embedded relative $id", map[string]string{
			"s.json": `{"type":"object","properties":{"p":{"$ref":"b.json"}},"$defs":{"e":{"$id":"b.json","type":"string"}}}`,
			"b.json": `{"type":"integer"}`,
		}},
		{"embedded absolute $id under additionalItems", map[string]string{
			"s.json": `{"type":"object","properties":{"p":{"$ref":"urn:x"}},"additionalItems":{"$id":"urn:x","type":"string"}}`,
			"b.json": `{"$id":"urn:x","type":"integer"}`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			validatorAccepts(t, c.files, `{"p":"x"}`, "so it did not read s.json's own subschema")
			h := refLinkBundle(t, c.files)
			_, page := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=s.json")
			if strings.Contains(page, `k=b.json`) {
				t.Errorf("the page links the $ref to b.json, which the validator does not load for it")
			}
		})
	}
}

// TestRefEntriesNamingOwnResourcesAreUnresolved: an entry whose target
// may be a resource of its own document (embedded, or a URL refsOf
// cannot tell without the artifact's key) is "", as is every entry of a
// document with an "$id" in data (a pointer reference from any artifact
// makes it a resource) or more "$id"s than maxOwnResources; a reference
// to the root's exact "$id", or out of a document whose resources all
// have exact URLs, keeps its entry.
func TestRefEntriesNamingOwnResourcesAreUnresolved(t *testing.T) {
	many := `{"$id":"urn:r","allOf":[` + strings.Repeat(`{"$id":"urn:e"},`, maxOwnResources) + `{"$ref":"a.json"}]}`
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"root exact", `{"$id":"urn:r","properties":{"p":{"$ref":"urn:r#/$defs/t"},"q":{"$ref":"#/$defs/t"}}}`,
			[]string{"urn:r\x00urn:r#/$defs/t", "urn:r\x00#/$defs/t"}},
		{"embedded exact named", `{"$id":"https://e.com/r","properties":{"p":{"$ref":"e.json"}},"$defs":{"e":{"$id":"e.json"}}}`,
			[]string{""}},
		{"embedded exact not named", `{"$id":"https://e.com/r","properties":{"p":{"$ref":"f.json"}},"$defs":{"e":{"$id":"e.json"}}}`,
			[]string{"https://e.com/r\x00f.json"}},
		{"embedded relative, no root $id", `{"properties":{"p":{"$ref":"f.json"}},"$defs":{"e":{"$id":"e.json"}}}`,
			[]string{""}},
		{"embedded absolute, no root $id", `{"properties":{"p":{"$ref":"f.json"}},"$defs":{"e":{"$id":"urn:e"}}}`,
			[]string{"f.json"}},
		{"embedded synthetic URL", `{"properties":{"p":{"$ref":"f.json"}},"$defs":{"e":{"$id":"AmpBundle:/f.json"}}}`,
			[]string{""}},
		{"$id in data", `{"properties":{"p":{"$ref":"f.json"}},"examples":[{"$id":"urn:x"}]}`,
			[]string{""}},
		{"fragment-only $id in data", `{"properties":{"p":{"$ref":"f.json"}},"examples":[{"$id":"#x"}]}`,
			[]string{"f.json"}},
		{"too many $ids", many, []string{""}},
	} {
		if got := refsOf([]byte(c.doc)); !slices.Equal(got, c.want) {
			t.Errorf("%s: entries %q, want %q", c.name, got, c.want)
		}
	}
}

// validatorAccepts fails the test unless the offline validator compiles
// files' s.json and accepts the instance inst (why: what a refusal
// would mean).
func validatorAccepts(t *testing.T, files map[string]string, inst, why string) {
	t.Helper()
	sch, err := offlineschema.Compile(catalogMemLoader(files), "s.json", offlineschema.Options{})
	if err != nil {
		t.Fatalf("the validator does not compile s.json: %v", err)
	}
	v, _ := offlineschema.ValueFromJSON([]byte(inst))
	if err := sch.Validate(v); err != nil {
		t.Fatalf("the validator refuses %s, %s: %v", inst, why, err)
	}
}

// prettyToks renders the schema text as artifact s.json of a model
// holding only it.
func prettyToks(text []byte) []Tok {
	m := &Model{schemas: map[SchemaLoc]Schema{}}
	s := Schema{Loc: SchemaLoc{BundleID: "b", Key: "s.json"}, Text: text, refs: refsOf(text)}
	m.schemas[s.Loc] = s
	return m.pretty(s, "s")
}
