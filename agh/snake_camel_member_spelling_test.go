package agh

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestCamelCaseSpellingOfAKnownMemberIsRefused: the page's
// members are snake_case (expires_at, reply_to, context_needed), and many
// JSON readers (protojson, pydantic aliases, serde's rename_all) take a
// camelCase spelling of a member as the member itself.
//
// Attack: a peer signs an envelope whose expires_at is absent and whose
// expiresAt has passed, or a capability holding context_needed and
// contextNeeded with different lists. AGH-5 refuses a spelling that
// differs from a known member only in case; one that differs by its
// underscores as well is an unknown member to us, covered by the proof
// and digest, and the known member to a camelCase reader: two readings of
// one signed document (we take a transfer the other side holds expired;
// we cache one context list and a relay's reader acts on another).
//
// Before AGH-10: both accepted.
//
// Should: a member that is a known member's name but for case and
// underscores (expiresAt, Reply_To, contextNeeded, context__needed) is
// refused like a case variant: invalid_envelope in the envelope and its
// body, invalid_document in a capability document.
func TestCamelCaseSpellingOfAKnownMemberIsRefused(t *testing.T) {
	key := testKey(1)
	for _, c := range []struct {
		doc string
		set map[string]string
	}{
		{"expiresAt in the past, expires_at absent", map[string]string{"expiresAt": "1"}},
		{"replyTo beside no reply_to", map[string]string{"replyTo": `"msg_evil"`}},
		{"expires_at spelt EXPIRESAT", map[string]string{"EXPIRESAT": "1"}},
	} {
		env := resign(t, signed(t, key), c.set, key, keyID(key))
		if _, err := ReceiveTransfer(env, recvOpts()); errName(err) != string(ErrInvalidEnvelope) {
			t.Errorf("%s: %v, want %s", c.doc, err, ErrInvalidEnvelope)
		}
	}
	for _, extra := range []map[string]json.RawMessage{
		{"contextNeeded": json.RawMessage(`["secrets"]`)},
		{"context__needed": json.RawMessage(`["secrets"]`)},
		{"ExecutionOutline": json.RawMessage(`["rm -rf"]`)},
	} {
		c, err := Capability{ID: "a", Summary: "s", Outcome: "o", ContextNeeded: []string{"repo"}, Extra: extra}.WithDigest()
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := c.MarshalJSON()
		if _, err := VerifyCapability(doc); errName(err) != string(ErrInvalidDocument) {
			t.Errorf("%s: %v, want %s", doc, err, ErrInvalidDocument)
		}
		env, err := TransferEnvelope(c, &Signer{Key: key}, "", envOpts())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReceiveTransfer(env, recvOpts()); errName(err) != string(ErrInvalidDocument) {
			t.Errorf("transfer of %s: %v, want %s", doc, err, ErrInvalidDocument)
		}
	}
}

// TestSpellingCheckCostsNoAllocationPerMember: the AGH-10 check reads
// every member name of a document a peer sends; a 1 MiB capability of
// 47,000 members spelt close to a known one ("context_neede00001"), or one
// member of a million underscores, must cost one key buffer, not an
// allocation per member or per comparison.
func TestSpellingCheckCostsNoAllocationPerMember(t *testing.T) {
	var near, under strings.Builder
	near.WriteString(`{"id":"a","summary":"s","outcome":"o"`)
	for i := 0; near.Len() < MaxDocumentBytes-64; i++ {
		fmt.Fprintf(&near, `,"context_neede%05d":0`, i)
	}
	near.WriteString("}")
	under.WriteString(`{"id":"a","summary":"s","outcome":"o","`)
	under.WriteString(strings.Repeat("_", MaxDocumentBytes-100))
	under.WriteString(`x":0}`)
	for _, doc := range []string{near.String(), under.String()} {
		o, err := parseObject([]byte(doc), "capability document")
		if err != nil {
			t.Fatal(err)
		}
		if capSpellings.Variant(o) {
			t.Fatal("a document without variants holds one")
		}
		if a := testing.AllocsPerRun(3, func() { capSpellings.Variant(o) }); a > 8 {
			t.Errorf("the spelling check of a %d-member document allocates %.0f times", len(o), a)
		}
	}
}
