package catalog

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestOverriddenRefMemberIsNotLinked: a schema
// object may name "$ref" twice (schema documents are read as
// encoding/json reads them, the last member winning: GRAPH-1). The
// validator loads only the last value; the catalog's refsOf and printer
// took every "$ref" token, so the page linked the first "$ref" to a decoy
// artifact (b.json, accepting integers) that the validator never loads,
// next to the real one: a reader following the first link reads a
// contract the agent does not enforce. Should be: a "$ref" member that a
// later member of the same object overrides is shown without a link, and
// the model does not follow it.
func TestOverriddenRefMemberIsNotLinked(t *testing.T) {
	files := map[string]string{
		"s.json":    `{"type":"object","properties":{"p":{"$ref":"b.json","$ref":"real.json"}}}`,
		"b.json":    `{"type":"integer"}`,
		"real.json": `{"type":"string"}`,
	}
	validatorAccepts(t, files, `{"p":"x"}`, "so it did not load real.json")
	h := refLinkBundle(t, files)
	_, page := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=s.json")
	if strings.Contains(page, `k=b.json`) {
		t.Errorf("the page links the overridden $ref to b.json, which the validator never loads")
	}
	if !strings.Contains(page, `k=real.json`) {
		t.Errorf("the page does not link the $ref to real.json, which the validator loads")
	}
}

// TestRefEntriesOfOverriddenMembersAreUnresolved: a "$ref" inside a
// member that a later member of the same name overrides, at any depth,
// and also past maxRefs kept references, has no entry (""), while the
// entries of the member that wins keep theirs.
func TestRefEntriesOfOverriddenMembersAreUnresolved(t *testing.T) {
	many := `{"properties":{` + strings.Repeat(`"p":{"$ref":"x.json"},`, maxRefs) + `"q":{}},"properties":{}}`
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"$ref twice", `{"$ref":"a.json","$ref":"b.json"}`, []string{"", "b.json"}},
		{"holder twice", `{"properties":{"p":{"$ref":"a.json"}},"type":"object","properties":{"p":{"$ref":"b.json"}}}`, []string{"", "b.json"}},
		{"deep member overridden by a scalar", `{"allOf":[{"properties":{"p":{"not":{"$ref":"a.json"}},"p":true}},{"$ref":"b.json"}]}`, []string{"", "b.json"}},
		{"three times", `{"not":{"$ref":"a.json"},"not":{"$ref":"b.json"},"not":{"$ref":"c.json"}}`, []string{"", "", "c.json"}},
		{"other names kept", `{"properties":{"p":{"$ref":"a.json"},"q":{"$ref":"b.json"}}}`, []string{"a.json", "b.json"}},
	} {
		if got := refsOf([]byte(c.doc)); !slices.Equal(got, c.want) {
			t.Errorf("%s: entries %q, want %q", c.name, got, c.want)
		}
	}
	got := refsOf([]byte(many))
	if len(got) != maxRefs || slices.ContainsFunc(got, func(e string) bool { return e != "" }) {
		t.Errorf("references overridden after maxRefs were met keep an entry")
	}
}
