package a2acard

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestDidKeyKidThatNamesAnotherKeyIsRefused: a did:key kid is the key
// itself (A2A-3: "did:key:z6Mk…#z6Mk…" is the method id of exactly one
// Ed25519 key). An attacker who signs a card with their own key under the
// victim's did:key kid must not get `ampagent card verify --key
// ATTACKER.pem --kid VICTIM-KID` to print "valid: signed by
// did:key:<victim>…": a did:key kid, its DID part or its fragment naming
// another key than the one given is card_kid_mismatch, in Sign and in
// Verify (A2A-11).
func TestDidKeyKidThatNamesAnotherKeyIsRefused(t *testing.T) {
	attacker := otherKey()
	attackerPub := attacker.Public().(ed25519.PublicKey)
	victimKid := DIDKeyID(vectorPub())
	victimDID, _, _ := strings.Cut(victimKid, "#")
	attackerDID, _, _ := strings.Cut(DIDKeyID(attackerPub), "#")
	attackerFrag := strings.TrimPrefix(attackerDID, "did:key:")
	for _, kid := range []string{
		victimKid,                      // the victim's method id
		victimDID,                      // the victim's DID
		victimDID + "#" + attackerFrag, // the victim's DID, the attacker's fragment
		attackerDID + "#" + strings.TrimPrefix(victimDID, "did:key:"), // the attacker's DID, the victim's fragment
		attackerDID + "#key-1",                                 // a fragment a did:key document does not have
		"DID:KEY:" + strings.TrimPrefix(victimKid, "did:key:"), // the victim's, in capitals
	} {
		card, err := Sign(vectorCard(t), attacker, kid)
		if err == nil {
			t.Errorf("Sign with the attacker's key under kid %s: accepted, a card whose kid names another key", kid)
		} else {
			wantName(t, err, ErrKidMismatch)
		}
		if card == nil {
			// Sign refused; build the same card by hand as an attacker would.
			card = signUnchecked(t, attacker, kid, vectorCard(t))
		}
		v, err := Verify(card, attackerPub, kid)
		if err == nil {
			t.Errorf("card signed by the attacker's key verified as signed by %s: an attacker's card is reported as the victim's", v.KeyID)
		} else {
			wantName(t, err, ErrKidMismatch)
		}
	}
	// The key's own did:key, as its method id or its bare DID, signs and
	// verifies; a kid of another method is the caller's to name (A2A-3).
	for _, kid := range []string{DIDKeyID(attackerPub), attackerDID, "did:web:agent.example#key-1"} {
		card, err := Sign(vectorCard(t), attacker, kid)
		if err != nil {
			t.Fatalf("kid %s: %v", kid, err)
		}
		if _, err := Verify(card, attackerPub, kid); err != nil {
			t.Fatalf("kid %s: %v", kid, err)
		}
	}
}

// signUnchecked signs c with key under kid without Sign's checks, as an
// attacker's own tool would.
func signUnchecked(t *testing.T, key ed25519.PrivateKey, kid string, c *Card) []byte {
	t.Helper()
	payload, err := Payload(c)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ProtectedHeader(kid)
	if err != nil {
		t.Fatal(err)
	}
	prot := base64.RawURLEncoding.EncodeToString(h)
	c.Signatures = []Signature{{Protected: prot, Signature: base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, signingInput(prot, payload)))}}
	card, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return card
}

// signTree signs a card tree as it is (members the Card struct cannot
// hold included) with the vector key, validly.
func signTree(t *testing.T, card jcs.Object) []byte {
	t.Helper()
	payload, err := payloadOf(card)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ProtectedHeader(DIDKeyID(vectorPub()))
	prot := base64.RawURLEncoding.EncodeToString(h)
	sig := base64.RawURLEncoding.EncodeToString(ed25519.Sign(vectorKey(), signingInput(prot, payload)))
	return []byte(writeTree(set(card, "signatures", []any{jcs.Object{{Name: "protected", Value: prot}, {Name: "signature", Value: sig}}})))
}

// TestSignedCardWithCaseVariantMemberIsRefused: Verify and the signature
// read member names exactly, but a caller decoding the verified card into
// a Card (encoding/json) matches names case-insensitively, the last
// spelling winning: a validly signed card holding "url" and "URL" would be
// one endpoint to Verify and another to that caller, chosen by a member
// order the signature (over the sorted form) does not fix. A member of a
// Card struct spelt in another case, at any depth, is card_duplicate_member
// (A2A-10).
func TestSignedCardWithCaseVariantMemberIsRefused(t *testing.T) {
	const evil = "https://evil.example/amp"
	base := func(t *testing.T) jcs.Object {
		tree, err := jcs.Parse(signedVector(t), jcs.MaxDepth)
		if err != nil {
			t.Fatal(err)
		}
		return tree.(jcs.Object).Without("signatures")
	}
	iface := func(o jcs.Object, m jcs.Member) jcs.Object {
		i := get(o, "supportedInterfaces").([]any)[0].(jcs.Object)
		return set(o, "supportedInterfaces", []any{append(i, m)})
	}
	skill := func(o jcs.Object, m jcs.Member) jcs.Object {
		s := get(o, "skills").([]any)[0].(jcs.Object)
		return set(o, "skills", []any{append(s, m)})
	}
	for _, tc := range []struct {
		name string
		f    func(jcs.Object) jcs.Object
	}{
		{"url then URL in an interface", func(o jcs.Object) jcs.Object { return iface(o, jcs.Member{Name: "URL", Value: evil}) }},
		{"NAME beside name", func(o jcs.Object) jcs.Object { return append(o, jcs.Member{Name: "NAME", Value: "evil"}) }},
		{"Kelvin sign in sKills", func(o jcs.Object) jcs.Object {
			return append(o, jcs.Member{Name: "s\u212aills", Value: []any{}})
		}},
		{"ſ (U+017F) in a skill's Tags", func(o jcs.Object) jcs.Object {
			return skill(o, jcs.Member{Name: "tag\u017f", Value: []any{"evil"}})
		}},
		{"Streaming in capabilities", func(o jcs.Object) jcs.Object {
			c := get(o, "capabilities").(jcs.Object)
			return set(o, "capabilities", append(c, jcs.Member{Name: "Streaming", Value: true}))
		}},
	} {
		card := signTree(t, tc.f(base(t)))
		if _, err := Verify(card, vectorPub(), ""); err == nil {
			t.Errorf("%s: a signed card with a case variant verified: a Card decoder reads another card than the verifier", tc.name)
		} else {
			wantName(t, err, ErrDuplicateMember)
		}
	}
	// The threat is real: encoding/json reads the variant.
	var c Card
	if err := json.Unmarshal(signTree(t, iface(base(t), jcs.Member{Name: "URL", Value: evil})), &c); err != nil || c.SupportedInterfaces[0].URL != evil {
		t.Fatalf("test premise: encoding/json read url as %q (%v)", c.SupportedInterfaces[0].URL, err)
	}
	// Members that are no spelling of a Card member, and members inside
	// opaque values (extension params), are signed as they are.
	ok := signTree(t, iface(base(t), jcs.Member{Name: "urls", Value: evil}))
	if _, err := Verify(ok, vectorPub(), ""); err != nil {
		t.Fatalf("an unrelated member: %v", err)
	}
}

// TestSignedCardWithCaseVariantInOurOwnExtensionParamsIsRefused: the
// card's own extension (ExtensionURI) carries, per skill, the bundle and
// the SHA-256 of its input and output schemas, the pins a caller checks
// before it invokes, read with the exported ServedParams. A validly signed
// card whose params entry holds "input_schema" and, after it,
// "INPUT_SCHEMA" (or "Bundle_ID", "input_ſchema", "ID") was two members to
// Verify and the signature and the attacker's pin to a caller decoding
// params into []ServedParams (encoding/json: case-insensitive, last wins),
// chosen by a member order the signature does not fix. Verify reads the
// params of an ExtensionURI extension against ServedParams' names, as the
// Card structs' (card_duplicate_member; A2A-10).
func TestSignedCardWithCaseVariantInOurOwnExtensionParamsIsRefused(t *testing.T) {
	const evilPin = "sha-256:0000000000000000000000000000000000000000000000000000000000000000"
	for _, variant := range []string{"INPUT_SCHEMA", "Bundle_ID", "input_\u017fchema", "I\u0044"} {
		tree, err := jcs.Parse(signedVector(t), jcs.MaxDepth)
		if err != nil {
			t.Fatal(err)
		}
		card := tree.(jcs.Object).Without("signatures")
		caps := get(card, "capabilities").(jcs.Object)
		ext := get(caps, "extensions").([]any)[0].(jcs.Object)
		params := get(ext, "params").(jcs.Object)
		entry := get(params, "capabilities").([]any)[0].(jcs.Object)
		entry = append(entry, jcs.Member{Name: variant, Value: evilPin})
		params = set(params, "capabilities", []any{entry})
		ext = set(ext, "params", params)
		caps = set(caps, "extensions", []any{ext})
		signed := signTree(t, set(card, "capabilities", caps))

		// Premise: a caller reading the verified card's params with the
		// exported type gets the attacker's value.
		var c Card
		if err := json.Unmarshal(signed, &c); err != nil {
			t.Fatal(err)
		}
		var p struct {
			Capabilities []ServedParams `json:"capabilities"`
		}
		if err := json.Unmarshal(c.Capabilities.Extensions[0].Params, &p); err != nil {
			t.Fatal(err)
		}
		got := p.Capabilities[0]
		if got.InputSchema != evilPin && got.BundleID != evilPin && got.ID != evilPin {
			t.Fatalf("%s: test premise: encoding/json did not read the variant (%+v)", variant, got)
		}

		if _, err := Verify(signed, vectorPub(), ""); err == nil {
			t.Errorf("%s beside its exact spelling in the %s params verified: a ServedParams decoder reads pin %s the signer's exact readers never see",
				variant, ExtensionURI, evilPin)
		} else {
			wantName(t, err, ErrDuplicateMember)
		}
	}
}

// TestKidThatOnlyLooksLikeTheVictimsDidKeyIsRefused: a kid that is no DID
// yet reads as the victim's did:key (Cyrillic "е" in "key", a fullwidth
// colon, a zero-width joiner, percent-encoded colons) passed as "another
// method, the caller's to name": an attacker's card signed under it
// verified with the attacker's key, and `ampagent card verify --key
// ATTACKER.pem --kid KID` printed "valid: signed by did:kеy:<victim>…", the
// A2A-11 threat by homoglyph. Sign and Verify refuse a kid that is not a
// DID or DID URL (amp.ValidDID) before anything else (card_kid_mismatch).
func TestKidThatOnlyLooksLikeTheVictimsDidKeyIsRefused(t *testing.T) {
	attacker := otherKey()
	attackerPub := attacker.Public().(ed25519.PublicKey)
	victimMB := strings.TrimPrefix(strings.SplitN(DIDKeyID(vectorPub()), "#", 2)[0], "did:key:")
	for _, kid := range []string{
		"did:k\u0435y:" + victimMB + "#" + victimMB,  // Cyrillic е
		"did:key\uff1a" + victimMB + "#" + victimMB,  // fullwidth colon
		"did:\u200dkey:" + victimMB + "#" + victimMB, // zero-width joiner
		"did%3Akey%3A" + victimMB + "#" + victimMB,   // percent-encoded colons
	} {
		if _, err := Sign(vectorCard(t), attacker, kid); err == nil {
			t.Errorf("Sign under kid %q (no DID, reads as the victim's did:key): accepted", kid)
		} else {
			wantName(t, err, ErrKidMismatch)
		}
		card := signUnchecked(t, attacker, kid, vectorCard(t))
		if v, err := Verify(card, attackerPub, kid); err == nil {
			t.Errorf("an attacker's card verified under kid %q, which reads as the victim's did:key: reported as signed by %s", kid, v.KeyID)
		} else {
			wantName(t, err, ErrKidMismatch)
		}
	}
}
