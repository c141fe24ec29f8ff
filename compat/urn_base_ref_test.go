package compat

import "testing"

// TestRelativeRefAgainstAURNBaseResolvesAsTheValidatorDoes: a
// publisher ships a new input schema whose root "$id" is a URN,
// "urn:example:a", and whose "properties/n" is "$ref":"b". jsonschema
// v5.3.1 (resolveURL) does not resolve a reference against a "urn:" base
// by RFC 3986: it appends the reference to the base without its
// fragment, "urn:example:ab", and loads the artifact whose "$id" that is
// (an integer schema). The checker resolves by RFC 3986
// (schemagraph.Resolve, url.ResolveReference): "urn:///b", and follows
// the artifact the publisher gave that "$id" (a string schema). Before COMPAT-10 was amended (review 53):
// Compatible with an old schema whose "n" is a string, while the
// validator refuses {"n":"x"} under the new schema. Should be: a
// relative reference (anything but a bare fragment) whose base is a
// "urn:" URI, and a "urn:" reference the library takes as it is
// written, resolve as the library does, or the check is Unknown
// (unresolved_ref); the same for an "$id" resolved against such a base.
func TestRelativeRefAgainstAURNBaseResolvesAsTheValidatorDoes(t *testing.T) {
	old := map[string]string{"old.json": `{"type":"object","required":["n"],"properties":{"n":{"type":"string"}}}`}
	nw := map[string]string{
		"new.json":      `{"$id":"urn:example:a","type":"object","required":["n"],"properties":{"n":{"$ref":"b"}}}`,
		"enforced.json": `{"$id":"urn:example:ab","type":"integer"}`,
		"decoy.json":    `{"$id":"urn:///b","type":"string"}`,
	}
	r := witnessBackward(t, old, nw, `{"n":"x"}`)
	if r.Verdict == Compatible {
		t.Fatalf("Backward is Compatible, yet the validator accepts {\"n\":\"x\"} under the old schema and refuses it under the new one")
	}
}
