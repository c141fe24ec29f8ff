package catalog

import (
	"strings"
	"testing"
)

// TestPercentEncodedPointerLinksNoOtherMember: the
// validator (jsonschema v5.3.1, resolveFragment) splits a JSON pointer
// fragment at "/" and undoes "~1" and "~0" before it percent-decodes each
// token, so "#/$defs/a%2Fb" names the member "a/b" of "$defs". The
// catalog percent-decoded the whole fragment first (schemagraph.Resolve)
// and linked the in-page anchor of "/$defs/a/b": the member "b" of
// "$defs/a", a decoy accepting integers, while the agent enforces
// "$defs/a~1b" (strings). Should be: a fragment whose percent-encoding
// the validator reads otherwise (schemagraph.SameFragment) is not linked,
// or linked to what the validator reads.
func TestPercentEncodedPointerLinksNoOtherMember(t *testing.T) {
	files := map[string]string{
		"s.json": `{"type":"object","properties":{"p":{"$ref":"#/$defs/a%2Fb"}},"$defs":{"a/b":{"type":"string"},"a":{"b":{"type":"integer"}}}}`,
	}
	validatorAccepts(t, files, `{"p":"x"}`, "so it did not read $defs/a~1b")
	decoy := "#" + anchorID("s", "/$defs/a/b")
	for _, tok := range prettyToks([]byte(files["s.json"])) {
		if strings.Contains(tok.Text, "a%2Fb") && tok.Href == decoy {
			t.Errorf("the $ref is linked to the member b of $defs/a, which the validator does not read")
		}
	}
}

// TestSlashFragmentLinksTheRoot: the validator reads the fragment "#/"
// as the whole document (jsonschema v5.3.1's split), where RFC 6901 reads
// the member "" of the root; the page linked that member (a decoy
// accepting integers) while the agent enforces the root. Should be: the
// link names the root.
func TestSlashFragmentLinksTheRoot(t *testing.T) {
	files := map[string]string{
		"s.json": `{"type":"object","properties":{"p":{"type":"object"},"q":{"$ref":"#/"}},"":{"type":"integer"}}`,
	}
	validatorAccepts(t, files, `{"q":{"p":{}}}`, "so it did not read the root at q")
	linked := false
	for _, tok := range prettyToks([]byte(files["s.json"])) {
		if tok.Text == `"#/"` {
			linked = true
			if tok.Href != "#"+anchorID("s", "") {
				t.Errorf("the $ref \"#/\" links %q, not the root (%q)", tok.Href, "#"+anchorID("s", ""))
			}
		}
	}
	if !linked {
		t.Errorf("the $ref \"#/\" is not printed")
	}
}
