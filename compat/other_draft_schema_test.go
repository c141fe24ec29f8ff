package compat

import "testing"

// TestOtherDraftSchemaIsNotCompared: the validator the agent runs reads
// a document by the draft its "$schema" names, and before draft 2019-09
// a "$ref" hides its siblings: the old input schema below (draft-07)
// accepts {"n":5}, though "n" carries "type":"string" next to its
// "$ref". A checker that reads every document as draft 2020-12 takes the
// sibling as a constraint and says the new schema (n a string) is
// Compatible, refusing requests the old one accepted. A document whose
// "$schema" names another draft (or a meta-schema the checker does not
// know) is not compared: unreadable_schema, Unknown.
func TestOtherDraftSchemaIsNotCompared(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
	}{
		{"draft-07", "http://json-schema.org/draft-07/schema#"},
		{"draft 2019-09", "https://json-schema.org/draft/2019-09/schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := `{"$schema":"` + tc.schema + `","type":"object","required":["n"],
				"properties":{"n":{"$ref":"#/$defs/s","type":"string"}},"$defs":{"s":{}},"definitions":{"s":{}}}`
			if tc.name == "draft-07" {
				if validatorRefuses(t, map[string]string{"old.json": old}, "old.json", `{"n":5}`) {
					t.Fatalf("precondition: the validator refuses {\"n\":5} under the old draft-07 schema")
				}
			}
			nw := `{"type":"object","required":["n"],"properties":{"n":{"type":"string"}}}`
			ol := memLoader{files: map[string][]byte{"old.json": []byte(old)}}
			nl := memLoader{files: map[string][]byte{"new.json": []byte(nw)}}
			r := Backward(NewSource(ol), "old.json", NewSource(nl), "new.json")
			if r.Verdict == Compatible || !hasRule(r, "unreadable_schema") {
				t.Fatalf("Backward from a %s schema: %s %+v, want unknown (unreadable_schema)", tc.name, r.Verdict, r.Findings)
			}
		})
	}
	// The draft 2020-12 spellings the validator reads as such stay compared.
	for _, s := range []string{"https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft/2020-12/schema#"} {
		doc := []byte(`{"$schema":"` + s + `","type":"string"}`)
		l := memLoader{files: map[string][]byte{"s.json": doc}}
		if r := Backward(NewSource(l), "s.json", NewSource(l), "s.json"); r.Verdict != Compatible {
			t.Errorf("a schema with $schema %q against itself: %s %+v, want compatible", s, r.Verdict, r.Findings)
		}
	}
}
