package compat

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// TestPointerRefIntoDataMakesItsAnchorsAmbiguous: a publisher ships a
// new input schema whose "properties/n" is "$ref":"#s", with "$anchor":"s"
// on a string schema in "$defs" (where schemagraph.Index looks) and again
// under "x-decoy", an unknown keyword (data: Index does not walk it, nor
// does the library list it as a subschema), on an integer schema. A JSON
// pointer "$ref" to "#/x-decoy" elsewhere in the document (here an
// "allOf" member that accepts everything) makes jsonschema v5.3.1 resolve
// it as a "non-standard location": resolveFragment adds that location to
// the resource's subresources and lists its subschemas, so the decoy's
// "$anchor" becomes one of the resource's anchors, and "#s" then resolves
// in Go map order to either schema. Before COMPAT-10 was amended (review 53): Index records one "s" (no
// duplicate), the checker follows it to the string schema and says
// Compatible, while the validator (internal/offlineschema) refuses
// {"n":"x"} on some compiles of the new schema (about a third here) that
// the old one always accepts. Should be: a pointer reference into a
// location that is not a schema position (not reached through the
// library's subschema keywords) makes the checker Unknown for that
// document's anchors (or Index counts the anchors under such a target,
// making "s" a duplicate), and the offline compiler refuses the document
// as a duplicate anchor, as it does for two in schema positions.
func TestPointerRefIntoDataMakesItsAnchorsAmbiguous(t *testing.T) {
	const old = `{"type":"object","required":["n"],"properties":{"n":{"type":"string"}}}`
	const nw = `{"type":"object","required":["n"],
		"allOf":[{"$ref":"#/x-decoy"}],
		"properties":{"n":{"$ref":"#s"}},
		"$defs":{"real":{"$anchor":"s","type":"string"}},
		"x-decoy":{"$defs":{"d":{"$anchor":"s","type":"integer"}}}}`
	inst, err := offlineschema.ValueFromJSON([]byte(`{"n":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if validatorRefuses(t, map[string]string{"old.json": old}, "old.json", `{"n":"x"}`) {
		t.Fatal("the old schema refuses the witness")
	}
	refused := 0
	for range 40 {
		sch, err := offlineschema.Compile(memLoader{files: map[string][]byte{"new.json": []byte(nw)}}, "new.json", offlineschema.Options{})
		if err != nil {
			// The validator refuses the new schema itself: no
			// instance is lost, whatever the checker says.
			return
		}
		if sch.Validate(inst) != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the validator never picked the decoy: not a witness")
	}
	r := Backward(NewSource(memLoader{files: map[string][]byte{"old.json": []byte(old)}}), "old.json",
		NewSource(memLoader{files: map[string][]byte{"new.json": []byte(nw)}}), "new.json")
	if r.Verdict == Compatible {
		t.Fatalf("Backward is Compatible, yet the validator refused {\"n\":\"x\"} on %d of 40 compiles of the new schema", refused)
	}
}

// TestAnchorOfADocumentWithAPointerIntoDataIsNotFollowed: the pointer
// reference into data may sit where the checker never follows it (a
// property the producer never sends, a branch it never compares), and
// still the validator takes the anchors under its target for the
// document's, in the order it compiles. The checker follows no anchor of
// a document holding such a reference (or one percent-encoded, or one
// inside an embedded resource); a document whose pointer references
// all name schema positions, or other artifacts, keeps its anchors.
func TestAnchorOfADocumentWithAPointerIntoDataIsNotFollowed(t *testing.T) {
	const anchors = `"$defs":{"real":{"$anchor":"s","type":"string"}},"x-decoy":{"$defs":{"d":{"$anchor":"s","type":"integer"}}}`
	// A decoy of another name: "s" is declared in data nowhere, so no
	// pointer reference, here or in another artifact, adds a second "s"
	// (TestPointerRefInAnotherArtifactMakesAnchorsAmbiguous).
	const other = `"$defs":{"real":{"$anchor":"s","type":"string"}},"x-decoy":{"$defs":{"d":{"$anchor":"t","type":"integer"}}}`
	for _, tc := range []struct {
		name, doc string
		follows   bool
	}{
		{"pointer into data", `{"properties":{"m":{"$ref":"#/x-decoy"}},` + anchors + `}`, false},
		{"pointer into data, by the document's key", `{"properties":{"m":{"$ref":"new.json#/x-decoy"}},` + anchors + `}`, false},
		{"pointer into $defs itself", `{"properties":{"m":{"$dynamicRef":"#/$defs"}},` + anchors + `}`, false},
		{"pointer percent-encoded", `{"properties":{"m":{"$ref":"#/%24defs/real"}},` + anchors + `}`, false},
		{"pointer in an embedded resource", `{"properties":{"m":{"$id":"e.json","not":{"$ref":"#/a"}}},` + anchors + `}`, false},
		{"pointer to a schema position", `{"properties":{"m":{"$ref":"#/$defs/real"}},` + other + `}`, true},
		{"pointer to another artifact", `{"properties":{"m":{"$ref":"other.json#/x"}},` + other + `}`, true},
		{"no pointer", `{"properties":{"m":{"$ref":"#s"}},` + other + `}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSide(memLoader{files: map[string][]byte{"new.json": []byte(tc.doc)}})
			d, e := s.load("new.json")
			if e != "" {
				t.Fatal(e)
			}
			n, why := s.resolve(mkNode(d, "", d.base, d.root), "#s")
			if tc.follows && (why != "" || n.ptr != "/$defs/real") {
				t.Fatalf("#s: %q at %q, want /$defs/real", why, n.ptr)
			}
			if !tc.follows && why == "" {
				t.Fatalf("#s followed to %q in a document whose pointer reference names a spot that is not a schema position", n.ptr)
			}
		})
	}
}
