package compat

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// TestPointerSpelledOtherwiseThanTheLibraryIsNotASchemaPosition: the
// checker judged a JSON pointer "$ref" percent-decoded against its own
// copy of the library's subschema table, where jsonschema v5.3.1 looks the
// pointer up by the text of its keys ("a;b" is keyed "a%3Bb"): to the
// library "#/$defs/a;b" is a "non-standard location", whose subschemas it
// lists again as the document's, their anchors competing with the
// others, and the offline compiler refuses such a document (SCHEMA-6). The
// checker followed it and answered Compatible for a new schema the agent
// cannot compile. One place now answers for both (schemagraph
// .SchemaPosition on the library's spelling, GRAPH-3): Unknown.
func TestPointerSpelledOtherwiseThanTheLibraryIsNotASchemaPosition(t *testing.T) {
	const old = `{"type":"object","required":["n"],"properties":{"n":{"type":"string"}}}`
	const nw = `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/a;b"}},
		"$defs":{"a;b":{"$anchor":"s","type":"string"}}}`
	if _, err := offlineschema.Compile(memLoader{files: map[string][]byte{"new.json": []byte(nw)}}, "new.json", offlineschema.Options{}); err == nil {
		t.Fatal("the offline compiler accepts the new schema: not a witness")
	}
	r := Backward(NewSource(memLoader{files: map[string][]byte{"old.json": []byte(old)}}), "old.json",
		NewSource(memLoader{files: map[string][]byte{"new.json": []byte(nw)}}), "new.json")
	if r.Verdict == Compatible {
		t.Fatal("Backward is Compatible for a new schema whose pointer the validator reads as a non-standard location")
	}
	if !hasRule(r, "unresolved_ref") {
		t.Fatalf("findings %+v, want unresolved_ref", r.Findings)
	}
	// Spelled as the library keys it, the same place is a schema
	// position, followed.
	const spelled = `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/a%3Bb"}},
		"$defs":{"a;b":{"type":"string"}}}`
	r = Backward(NewSource(memLoader{files: map[string][]byte{"old.json": []byte(old)}}), "old.json",
		NewSource(memLoader{files: map[string][]byte{"new.json": []byte(spelled)}}), "new.json")
	if r.Verdict != Compatible {
		t.Fatalf("spelled as the library keys it: %s %+v, want compatible", r.Verdict, r.Findings)
	}
}
