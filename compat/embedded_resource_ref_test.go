package compat

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// validatorRefuses reports whether the offline validator the agent runs
// (internal/offlineschema) compiles the schema at key of files and
// refuses the instance inst: what the agent enforces.
func validatorRefuses(t *testing.T, files map[string]string, key, inst string) bool {
	t.Helper()
	l := memLoader{files: map[string][]byte{}}
	for k, v := range files {
		l.files[k] = []byte(v)
	}
	sch, err := offlineschema.Compile(l, key, offlineschema.Options{})
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	v, err := offlineschema.ValueFromJSON([]byte(inst))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(v) != nil
}

// checkAgainstOldString is Backward from an input schema requiring a
// string member "n" to the new schema new.json of files.
func checkAgainstOldString(files map[string]string) Report {
	old := `{"type":"object","required":["n"],"properties":{"n":{"type":"string"}}}`
	ol := memLoader{files: map[string][]byte{"old.json": []byte(old)}}
	nl := memLoader{files: map[string][]byte{}}
	for k, v := range files {
		nl.files[k] = []byte(v)
	}
	return Backward(NewSource(ol), "old.json", NewSource(nl), "new.json")
}

// hasRule reports whether r has a finding of rule.
func hasRule(r Report, rule string) bool {
	for _, f := range r.Findings {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// TestEmbeddedResourceRefIsNotResolvedOutsideItsResource: a publisher
// ships a new input schema whose subschemas carry their own "$id" (an
// embedded schema resource, JSON Schema 2020-12 §8.2.1, which the
// validator the agent runs, internal/offlineschema over jsonschema
// v5.3.1, honours): a "$ref" inside such a resource resolves against its
// "$id", the validator looks a target up among the document's embedded
// resources before any artifact, and reads a JSON pointer from the
// resource it found. A checker that resolves against the document (or
// reads the bundle's artifact of that name) compares a decoy the
// publisher placed where it looks (a string schema) while the validator
// enforces the embedded one (an integer): it said Compatible for a change
// that refuses every old request. The checker does not follow a
// reference an embedded resource could make it resolve differently
// (unresolved_ref, Unknown); the validator's reading of a percent-encoded
// pointer ("%2F" is part of a member name, not a separator) likewise.
func TestEmbeddedResourceRefIsNotResolvedOutsideItsResource(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"pointer_to_embedded_resource", map[string]string{
			"new.json": `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/e"}},
				"$defs":{"s":{"type":"string"},
					"e":{"$id":"inner.json","$ref":"#/$defs/s","$defs":{"s":{"type":"integer"}}}}}`,
		}},
		{"embedded_id_names_decoy_artifact", map[string]string{
			"new.json": `{"type":"object","required":["n"],"properties":{"n":
				{"$id":"decoy.json","$ref":"#/$defs/s","$defs":{"s":{"type":"integer"}}}}}`,
			"decoy.json": `{"$defs":{"s":{"type":"string"}}}`,
		}},
		{"pointer_through_embedded_resource", map[string]string{
			"new.json": `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/e/$defs/t"}},
				"$defs":{"s":{"type":"string"},
					"e":{"$id":"inner.json","$defs":{"s":{"type":"integer"},"t":{"$ref":"#/$defs/s"}}}}}`,
		}},
		{"embedded_id_shadows_artifact", map[string]string{
			"new.json": `{"type":"object","required":["n"],"properties":{"n":{"$ref":"inner.json"}},
				"$defs":{"e":{"$id":"inner.json","type":"integer"}}}`,
			"inner.json": `{"type":"string"}`,
		}},
		{"percent_encoded_slash_in_pointer", map[string]string{
			"new.json": `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/a%2Fb"}},
				"$defs":{"a/b":{"type":"integer"},"a":{"b":{"type":"string"}}}}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !validatorRefuses(t, tc.files, "new.json", `{"n":"hello"}`) {
				t.Fatalf("precondition: the validator accepts the old request; the embedded resource is not what it enforces")
			}
			r := checkAgainstOldString(tc.files)
			if r.Verdict == Compatible {
				t.Fatalf("Backward is Compatible although the validator refuses the old request {\"n\":\"hello\"}: a $ref resolved against another schema than the validator's")
			}
			if !hasRule(r, "unresolved_ref") {
				t.Fatalf("Backward %s %+v, want unresolved_ref", r.Verdict, r.Findings)
			}
		})
	}
}

// TestEmbeddedResourceElsewhereKeepsLocalRefs: a document that holds an
// embedded resource still has its own references followed where the
// resource cannot change them (a pointer that does not enter it), so the
// refusal above costs no more than it must.
func TestEmbeddedResourceElsewhereKeepsLocalRefs(t *testing.T) {
	files := map[string]string{
		"new.json": `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/s"}},
			"$defs":{"s":{"type":"string"},"e":{"$id":"inner.json","type":"integer"}}}`,
	}
	if validatorRefuses(t, files, "new.json", `{"n":"hello"}`) {
		t.Fatalf("precondition: the validator refuses the old request")
	}
	if r := checkAgainstOldString(files); r.Verdict != Compatible {
		t.Fatalf("Backward %s %+v, want compatible: the reference does not enter the embedded resource", r.Verdict, r.Findings)
	}
}
