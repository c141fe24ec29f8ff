package agh

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestCapabilityDecodedWithEncodingJSONReadsAsVerified: Capability and
// CatalogExt are this package's types for a capability document and for
// the value of a whois answer's ext["agh.capability_catalog"] (CatalogExt
// has json tags for it), and a Go consumer decodes a peer's answer, or a
// document it verified, into them with encoding/json. Capability had no
// UnmarshalJSON, so encoding/json read it by its Go field names, ignoring
// case: context_needed and the other snake_case lists were dropped, the
// pins (ampbundle.input_schema, ...) were dropped, and a member named
// "Extra" (or "extra", "EXTRA") became Capability.Extra, the map where
// every reader of this package keeps the unknown members and the pins.
//
// Attack: a peer digests (or signs, in a transfer) a capability whose
// ampbundle.input_schema is the honest pin and which holds
// "Extra": {"ampbundle.input_schema": "<another>"}. VerifyCapability and
// ReceiveTransfer accept it ("Extra" is an unknown member, covered by
// the digest and the proof) and report the honest pin; the consumer that
// decodes the same bytes into Capability reads the other one, and no
// context_needed. A document VerifyCapability refuses ("id" beside "ID")
// decoded too, as the spelling that matched the field.
//
// Before AGH-23: the decoded pin was the other one (3 of 3 spellings, in
// a document, a catalog answer and a transfer body), and the refused
// document decoded. Should: decoding reads what ParseCapability reads,
// member for member, and a document it refuses does not decode.
func TestCapabilityDecodedWithEncodingJSONReadsAsVerified(t *testing.T) {
	const honest, other = `"sha-256:00aa"`, `"sha-256:ffee"`
	for _, name := range []string{"Extra", "extra", "EXTRA"} {
		c := withDigest(t, Capability{ID: "org.example.x:1.0.0", Summary: "s", Outcome: "o", ContextNeeded: []string{"repo"},
			Extra: map[string]json.RawMessage{KeyInputSchema: json.RawMessage(honest), name: json.RawMessage(`{"` + KeyInputSchema + `":` + other + `}`)}})
		doc, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		verified, err := VerifyCapability(doc)
		if err != nil || string(verified.Extra[KeyInputSchema]) != honest {
			t.Fatalf("%s: the document does not verify with the honest pin: %v", name, err)
		}
		tr, err := ReceiveTransfer(signedTransfer(t, c, nil), recvOpts())
		if err != nil || string(tr.Capability.Extra[KeyInputSchema]) != honest {
			t.Fatalf("%s: the transfer is not received with the honest pin: %v", name, err)
		}
		var one Capability
		var answer map[string]CatalogExt
		var body struct {
			Capability Capability `json:"capability"`
		}
		transferBody, err := TransferBody(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []struct {
			what string
			err  error
			got  func() Capability
		}{
			{"a document", json.Unmarshal(doc, &one), func() Capability { return one }},
			{"a catalog answer", json.Unmarshal([]byte(`{"`+ExtCatalog+`":{"capabilities":[`+string(doc)+`]}}`), &answer),
				func() Capability { return answer[ExtCatalog].Capabilities[0] }},
			{"a transfer body", json.Unmarshal(transferBody, &body), func() Capability { return body.Capability }},
		} {
			if d.err != nil {
				t.Errorf("%s, %s: %v", name, d.what, d.err)
				continue
			}
			got := d.got()
			if string(got.Extra[KeyInputSchema]) != honest || !slices.Equal(got.ContextNeeded, []string{"repo"}) || got.Digest != verified.Digest {
				t.Errorf("%s, %s: decoded pin %s, context_needed %q, digest %q; verified %s, [repo], %q",
					name, d.what, got.Extra[KeyInputSchema], got.ContextNeeded, got.Digest, honest, verified.Digest)
			}
		}
	}
	refused := []byte(`{"id":"org.example.x:1.0.0","ID":"org.example.y:1.0.0","summary":"s","outcome":"o"}`)
	if _, err := VerifyCapability(refused); errName(err) != string(ErrInvalidDocument) {
		t.Fatalf("a document with id and ID: %v, want %s", err, ErrInvalidDocument)
	}
	var c Capability
	if err := json.Unmarshal(refused, &c); err == nil {
		t.Errorf("a document VerifyCapability refuses decoded, id %q", c.ID)
	}
}

// TestPeerCardDecodedWithEncodingJSONReadsAsParsed: PeerCard had no
// UnmarshalJSON either, so encoding/json took a card's member "Extra"
// for PeerCard.Extra (the map ParsePeerCard keeps peer_id and every
// other member in) and read capability ids and member counts
// ParsePeerCard refuses (AGH-15, AGH-8).
//
// Attack: a peer card whose peer_id is its own and which holds
// "Extra": {"peer_id": "<another peer's DID>"}, one listing
// "build-\u017fite" (long s) beside "build-site", one of 257 members.
//
// Before AGH-23: the decoded peer_id was the other one, and the other
// two decoded. Should: decoding reads what ParsePeerCard reads, and
// refuses what it refuses.
func TestPeerCardDecodedWithEncodingJSONReadsAsParsed(t *testing.T) {
	card := []byte(`{"peer_id":"did:key:z6MkPeer","capabilities":["build-site"],"Extra":{"peer_id":"did:key:z6MkOther"}}`)
	parsed, err := ParsePeerCard(card)
	if err != nil {
		t.Fatal(err)
	}
	var pc PeerCard
	if err := json.Unmarshal(card, &pc); err != nil {
		t.Fatal(err)
	}
	if string(pc.Extra["peer_id"]) != string(parsed.Extra["peer_id"]) || !slices.Equal(pc.Capabilities, parsed.Capabilities) {
		t.Errorf("decoded peer_id %s, capabilities %q; ParsePeerCard %s, %q", pc.Extra["peer_id"], pc.Capabilities, parsed.Extra["peer_id"], parsed.Capabilities)
	}
	wide := []byte(`{"capabilities":[]`)
	for i := range MaxOpaqueMembers + 1 {
		wide = append(wide, `,"m`+string(rune('a'+i%26))+string(rune('a'+i/26))+`":0`...)
	}
	wide = append(wide, '}')
	for _, tc := range []struct {
		name string
		card []byte
	}{
		{"a non-ASCII capability id", []byte(`{"capabilities":["build-site","build-\u017fite"]}`)},
		{"more than MaxOpaqueMembers members", wide},
	} {
		if _, err := ParsePeerCard(tc.card); err == nil {
			t.Fatalf("%s: ParsePeerCard accepts it", tc.name)
		}
		var pc PeerCard
		if err := json.Unmarshal(tc.card, &pc); err == nil {
			t.Errorf("%s: decoded, though ParsePeerCard refuses it", tc.name)
		}
	}
}
