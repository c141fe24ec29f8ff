package agh

import (
	"encoding/json"
	"testing"
)

// TestDashSpellingOfAKnownMemberIsRefused: AGH-10 folds case and
// underscores and rejected folding '-' because "no reader we know maps
// kebab-case to these names". Go's own encoding/json/v2 does: with
// MatchCaseInsensitiveNames (or a `case:ignore` field) "matching is
// case-insensitive where dashes and underscores are also ignored" (its
// package doc; its foldName drops '_' and '-'), so
// "expires-at" and "context-needed" are expires_at and context_needed to
// it.
//
// Attack: a peer signs an envelope without expires_at and with
// "expires-at" in the past, or a digest-bound capability holding
// context_needed and "context-needed" with another list. We take the
// first live and cache the first list; a json/v2 case-insensitive reader
// takes it expired, or refuses the document as naming context_needed
// twice: two readings of one signed document, as AGH-10 describes for
// camelCase.
//
// Before AGH-13: both accepted.
//
// Should: '-' is left out of the spelling key like '_':
// invalid_envelope, invalid_document.
func TestDashSpellingOfAKnownMemberIsRefused(t *testing.T) {
	key := testKey(1)
	for _, set := range []map[string]string{{"expires-at": "1"}, {"Reply-To": `"msg_evil"`}} {
		env := resign(t, signed(t, key), set, key, keyID(key))
		if _, err := ReceiveTransfer(env, recvOpts()); errName(err) != string(ErrInvalidEnvelope) {
			t.Errorf("envelope with %v: %v, want %s", set, err, ErrInvalidEnvelope)
		}
	}
	c, err := Capability{ID: "a", Summary: "s", Outcome: "o", ContextNeeded: []string{"repo"},
		Extra: map[string]json.RawMessage{"context-needed": json.RawMessage(`["secrets"]`)}}.WithDigest()
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := c.MarshalJSON()
	if _, err := ParseCapability(doc); errName(err) != string(ErrInvalidDocument) {
		t.Errorf("capability with context-needed: %v, want %s", err, ErrInvalidDocument)
	}
}
