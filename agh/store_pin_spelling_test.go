package agh

import (
	"encoding/json"
	"testing"
)

// TestStorePinMemberSpeltOtherwiseIsRefused: the capability documents
// this package writes from a store carry three members of ours,
// ampbundle.bundle_id, ampbundle.input_schema and ampbundle.output_schema
// (docs/FORMAT.md, "AGH projection"): the bundle and the schema hashes a
// consumer pins before it invokes. To a reader they are unknown members,
// kept in Extra, so AGH-5, AGH-10 and AGH-13 did not look at their
// spellings.
//
// Attack: a peer signs a transfer (or digests a catalog entry) whose
// capability holds the honest ampbundle.input_schema and an
// AMPBUNDLE.INPUT_SCHEMA (or ampbundle.inputSchema, or a lone
// ampbundle.bundle-id) naming another schema. The proof and the digest
// cover both as two members; Extra[KeyInputSchema] shows the honest pin,
// while encoding/json decoding the document into a struct tagged
// "ampbundle.input_schema" takes the last spelling (and encoding/json/v2
// matching names case-insensitively, or a camelCase-aliasing reader,
// the others): one signed document, two pins, picked by the reader.
//
// Before AGH-22: every one verified. Should: invalid_document from
// ParseCapability, VerifyCapability and ReceiveTransfer; the exact
// members, and other members of ours, still verify.
func TestStorePinMemberSpeltOtherwiseIsRefused(t *testing.T) {
	const honest, evil = `"sha-256:00aa"`, `"sha-256:ffee"`
	for _, tc := range []struct {
		name  string
		extra map[string]json.RawMessage
		ok    bool
	}{
		{"the exact members", map[string]json.RawMessage{KeyBundleID: json.RawMessage(`"org.example"`), KeyInputSchema: json.RawMessage(honest), KeyOutputSchema: json.RawMessage(honest)}, true},
		{"an unrelated member of ours", map[string]json.RawMessage{"ampbundle.note": json.RawMessage(evil)}, true},
		{"input_schema beside INPUT_SCHEMA", map[string]json.RawMessage{KeyInputSchema: json.RawMessage(honest), "AMPBUNDLE.INPUT_SCHEMA": json.RawMessage(evil)}, false},
		{"input_schema beside inputSchema", map[string]json.RawMessage{KeyInputSchema: json.RawMessage(honest), "ampbundle.inputSchema": json.RawMessage(evil)}, false},
		{"output_schema beside output-schema", map[string]json.RawMessage{KeyOutputSchema: json.RawMessage(honest), "ampbundle.output-schema": json.RawMessage(evil)}, false},
		{"a lone bundle-id", map[string]json.RawMessage{"ampbundle.bundle-id": json.RawMessage(`"org.evil"`)}, false},
		{"a lone Bundle_ID", map[string]json.RawMessage{"Ampbundle.Bundle_ID": json.RawMessage(`"org.evil"`)}, false},
	} {
		c, err := Capability{ID: "org.example.x:1.0.0", Summary: "s", Outcome: "o", Extra: tc.extra}.WithDigest()
		if err != nil {
			t.Fatal(err)
		}
		doc, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		env := signedTransfer(t, c, nil)
		for _, r := range []struct {
			reader string
			err    error
		}{
			{"ParseCapability", func() error { _, err := ParseCapability(doc); return err }()},
			{"VerifyCapability", func() error { _, err := VerifyCapability(doc); return err }()},
			{"ReceiveTransfer", func() error { _, err := ReceiveTransfer(env, recvOpts()); return err }()},
		} {
			switch {
			case tc.ok && r.err != nil:
				t.Errorf("%s, %s: %v", tc.name, r.reader, r.err)
			case !tc.ok && errName(r.err) != string(ErrInvalidDocument):
				t.Errorf("%s, %s: %v, want %s", tc.name, r.reader, r.err, ErrInvalidDocument)
			}
		}
	}
}

// TestCaseVariantPinIsWhatEncodingJSONReads checks the premise of
// TestStorePinMemberSpeltOtherwiseIsRefused: encoding/json, decoding a
// document holding ampbundle.input_schema and then AMPBUNDLE.INPUT_SCHEMA
// into a struct tagged with the first, keeps the second.
func TestCaseVariantPinIsWhatEncodingJSONReads(t *testing.T) {
	var pins struct {
		InputSchema string `json:"ampbundle.input_schema"`
	}
	doc := `{"ampbundle.input_schema":"sha-256:00aa","AMPBUNDLE.INPUT_SCHEMA":"sha-256:ffee"}`
	if err := json.Unmarshal([]byte(doc), &pins); err != nil {
		t.Fatal(err)
	}
	if pins.InputSchema != "sha-256:ffee" {
		t.Fatalf("encoding/json read %q: the premise no longer holds", pins.InputSchema)
	}
}
