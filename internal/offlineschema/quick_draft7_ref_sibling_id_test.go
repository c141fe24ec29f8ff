package offlineschema

import (
	"maps"
	"slices"
	"testing"
)

// TestQuickCheckDraft07RefSiblingIDIsNotTheBase: in draft-07 a
// "$ref" hides its siblings, "$id" included: the library (jsonschema
// v5.3.1, Draft.getID: "$ref prevents a sibling id from changing the base
// uri") resolves the root's "$ref" against the artifact's own URL, not
// against the "$id" written beside it.
//
// Attack: a publisher signs a draft-07 root {"$id": https://…/q.json,
// "$ref": "common.json"} next to a document whose $id is
// https://…/common.json. Today the quick pass (quick.go scan: base = the
// root $id; walker.ref resolves against it) resolves the reference to that
// $id and vouches for the schema without compiling it, while Compile
// resolves it to ampbundle:///capabilities/q/1.0.0/common.json, which the
// bundle does not hold, and refuses it (unresolved_ref): the builder and
// importer accept a bundle whose schema never compiles (Check's contract:
// "it refuses what Compile refuses").
//
// Want: the quick pass does not take a draft-07 "$id" beside "$ref" as the
// base (or leaves such a document to Compile), so Check returns
// Compile's unresolved_ref.
func TestQuickCheckDraft07RefSiblingIDIsNotTheBase(t *testing.T) {
	files := map[string]string{
		qk:                    `{"$schema": "http://json-schema.org/draft-07/schema#", "$id": "https://schemas.example.org/q.json", "$ref": "common.json"}`,
		"schemas/common.json": `{"$schema": "http://json-schema.org/draft-07/schema#", "$id": "https://schemas.example.org/common.json", "type": "string"}`,
	}
	l := newLoader(files)
	q := NewQuickCheck()
	for _, k := range slices.Sorted(maps.Keys(files)) {
		if _, err := q.Add(k, []byte(files[k])); err != nil {
			t.Fatalf("Add(%s): %v", k, err)
		}
	}
	_, cerr := Compile(l, qk, Options{})
	ampErr(t, cerr, ErrUnresolvedRef, 0) // the validator's verdict
	if err := q.Check(l, qk, Options{}); err == nil {
		t.Fatalf("the quick pass vouched (%q) for a schema Compile refuses: %v", q.NeedsCompile(qk), cerr)
	}
}
