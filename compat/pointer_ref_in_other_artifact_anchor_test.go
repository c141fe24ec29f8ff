package compat

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// TestPointerRefInAnotherArtifactMakesAnchorsAmbiguous: a publisher ships
// a new input schema whose "n" is "$ref":"b.json#s", b.json declaring
// "$anchor":"s" on a string schema in "$defs" (where schemagraph.Index
// looks) and again under "x-decoy" (data: not a schema position) on an
// integer schema. The JSON pointer reference into that data,
// "b.json#/x-decoy", is written in a third artifact, c.json, reached from
// a property the old schema never lets a producer send ("z"), so the
// checker never reads it: b.json itself holds no pointer reference, and
// COMPAT-10's rule for a document's own pointers did not apply. The
// validator (jsonschema v5.3.1) compiles "z" too, and when it does so
// before "n" it lists the decoy's subschemas as b.json's, whose "#s" then
// names either schema in Go map order: {"n":"x"}, accepted by the old
// schema, is refused on some compiles. Before: Compatible. Should be:
// Unknown, since an anchor name that data anywhere in its document also
// declares does not name one subschema (the offline compiler refuses such
// a bundle outright, SCHEMA-6; the checker must not vouch for it).
func TestPointerRefInAnotherArtifactMakesAnchorsAmbiguous(t *testing.T) {
	const old = `{"type":"object","required":["n"],"properties":{"n":{"type":"string"}},"additionalProperties":false}`
	files := map[string]string{
		"new.json": `{"type":"object","required":["n"],"properties":{"n":{"$ref":"b.json#s"},"z":{"$ref":"c.json"}}}`,
		"b.json":   `{"$defs":{"real":{"$anchor":"s","type":"string"}},"x-decoy":{"$defs":{"d":{"$anchor":"s","type":"integer"}}}}`,
		"c.json":   `{"$ref":"b.json#/x-decoy"}`,
	}
	refused, tries := 0, 0
	for ; tries < 1000 && refused < 3; tries++ {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		for k, v := range files {
			if err := c.AddResource(schemagraph.ArtifactURL(k), strings.NewReader(v)); err != nil {
				t.Fatal(err)
			}
		}
		sch, err := c.Compile(schemagraph.ArtifactURL("new.json"))
		if err != nil {
			t.Fatalf("the library does not compile the new schema: %v", err)
		}
		if sch.Validate(map[string]any{"n": "x"}) != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the library never took the decoy: not a witness")
	}
	t.Logf("the library refused {\"n\":\"x\"} on %d of %d compiles", refused, tries)
	nl := memLoader{files: map[string][]byte{}}
	for k, v := range files {
		nl.files[k] = []byte(v)
	}
	r := Backward(NewSource(memLoader{files: map[string][]byte{"old.json": []byte(old)}}), "old.json", NewSource(nl), "new.json")
	if r.Verdict == Compatible {
		t.Fatalf("Backward is Compatible, yet the validator refused {\"n\":\"x\"} on %d of %d compiles of the new schema", refused, tries)
	}
	if !hasRule(r, "unresolved_ref") {
		t.Fatalf("findings %+v, want unresolved_ref", r.Findings)
	}
}
