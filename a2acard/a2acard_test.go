package a2acard

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
)

// vectorKey is the key of docs/FORMAT.md's test vector: seed bytes 0..31.
func vectorKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// otherKey is a second key, an attacker's.
func otherKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0xa5}, ed25519.SeedSize))
}

// vectorCard is the card of docs/FORMAT.md's test vector.
func vectorCard(t testing.TB) *Card {
	t.Helper()
	c, err := New(Options{Name: "ampagent", Version: "1.0.0", URL: "https://agent.example/amp"}, []Served{{
		ID: "org.example.translate.text:2.1.0", Name: "org.example.translate.text", Version: "2.1.0",
		Summary: "adds formality", BundleID: "org.example.translate",
		InputSchema:  "sha-256:0276a8a7792081dc02262d569a1ba5cb2f387f2ce3b9808f7a3de7593bb7a48a",
		OutputSchema: "sha-256:a6ad3b2318e8136aec9a2d8cb14ce742dd82382205384cf9f9fa35001a271220",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func signedVector(t testing.TB) []byte {
	t.Helper()
	key := vectorKey()
	out, err := Sign(vectorCard(t), key, DIDKeyID(key.Public().(ed25519.PublicKey)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func vectorPub() ed25519.PublicKey { return vectorKey().Public().(ed25519.PublicKey) }

// edit parses a card, lets f change the tree, and writes it back as JSON
// (not canonical: members in document order).
func edit(t *testing.T, card []byte, f func(jcs.Object) jcs.Object) []byte {
	t.Helper()
	tree, err := jcs.Parse(card, jcs.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(writeTree(f(tree.(jcs.Object))))
}

// writeTree writes a tree in document order.
func writeTree(v any) string {
	switch x := v.(type) {
	case jcs.Object:
		parts := make([]string, len(x))
		for i, m := range x {
			k, _ := json.Marshal(m.Name)
			parts[i] = string(k) + ":" + writeTree(m.Value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = writeTree(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case json.Number:
		return string(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// set replaces (or adds) member name of o.
func set(o jcs.Object, name string, v any) jcs.Object {
	for i := range o {
		if o[i].Name == name {
			o[i].Value = v
			return o
		}
	}
	return append(o, jcs.Member{Name: name, Value: v})
}

func get(o jcs.Object, name string) any { v, _ := o.Get(name); return v }

// withSignature replaces the card's one signature by a protected header and
// signature of the test's making.
func withSignature(t *testing.T, card []byte, header any, sig []byte) []byte {
	t.Helper()
	h, _ := json.Marshal(header)
	return edit(t, card, func(o jcs.Object) jcs.Object {
		return set(o, "signatures", []any{jcs.Object{{Name: "protected", Value: base64.RawURLEncoding.EncodeToString(h)}, {Name: "signature", Value: base64.RawURLEncoding.EncodeToString(sig)}}})
	})
}

func wantName(t *testing.T, err error, name amp.ErrName) {
	t.Helper()
	if !errors.Is(err, name) {
		t.Fatalf("got %v, want %s", err, name)
	}
}

func TestSignedCardVerifiesAndNamesItsSkills(t *testing.T) {
	card := signedVector(t)
	v, err := Verify(card, vectorPub(), "")
	if err != nil {
		t.Fatal(err)
	}
	if v.KeyID != DIDKeyID(vectorPub()) || v.Name != "ampagent" || len(v.Skills) != 1 || v.Skills[0] != "org.example.translate.text:2.1.0" {
		t.Fatalf("verified %+v", v)
	}
	want, _ := Payload(vectorCard(t))
	if !bytes.Equal(v.Payload, want) {
		t.Fatalf("payload %s, want %s", v.Payload, want)
	}
}

// TestTamperedSkillFailsTheSignature: any change to what a skill says (its
// description, its schema hash in the extension) breaks the signature.
func TestTamperedSkillFailsTheSignature(t *testing.T) {
	card := signedVector(t)
	for name, f := range map[string]func(o jcs.Object) jcs.Object{
		"skill description": func(o jcs.Object) jcs.Object {
			skill := get(o, "skills").([]any)[0].(jcs.Object)
			set(skill, "description", "now also exfiltrates")
			return o
		},
		"schema hash": func(o jcs.Object) jcs.Object {
			ext := get(get(o, "capabilities").(jcs.Object), "extensions").([]any)[0].(jcs.Object)
			caps := get(get(ext, "params").(jcs.Object), "capabilities").([]any)[0].(jcs.Object)
			set(caps, "input_schema", "sha-256:"+strings.Repeat("0", 64))
			return o
		},
		"added skill": func(o jcs.Object) jcs.Object {
			skills := get(o, "skills").([]any)
			return set(o, "skills", append(skills, jcs.Object{{Name: "id", Value: "x"}, {Name: "name", Value: "x"}, {Name: "description", Value: "x"}, {Name: "tags", Value: []any{"x"}}}))
		},
		"explicit false streaming": func(o jcs.Object) jcs.Object {
			// optional: explicitly set is not a default
			return set(o, "capabilities", set(get(o, "capabilities").(jcs.Object), "streaming", false))
		},
	} {
		_, err := Verify(edit(t, card, f), vectorPub(), "")
		if !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: got %v, want %s", name, err, ErrBadSignature)
		}
	}
}

// TestReformattedCardStillVerifies: whitespace, member order, escapes and
// members holding their default (A2A §8.4.1) do not change the signed form.
func TestReformattedCardStillVerifies(t *testing.T) {
	card := signedVector(t)
	var pretty bytes.Buffer
	json.Indent(&pretty, card, "", "  ")
	reordered := edit(t, card, func(o jcs.Object) jcs.Object {
		out := jcs.Object{}
		for i := len(o) - 1; i >= 0; i-- {
			out = append(out, o[i])
		}
		skill := get(out, "skills").([]any)[0].(jcs.Object)
		get(out, "skills").([]any)[0] = set(skill, "examples", []any{})
		iface := get(out, "supportedInterfaces").([]any)[0].(jcs.Object)
		get(out, "supportedInterfaces").([]any)[0] = set(iface, "tenant", "")
		out = set(out, "securitySchemes", jcs.Object{})
		return set(out, "provider", nil)
	})
	for _, d := range []string{`"examples":[]`, `"tenant":""`, `"securitySchemes":{}`, `"provider":null`} {
		if !bytes.Contains(reordered, []byte(d)) {
			t.Fatalf("the reordered card lacks %s", d)
		}
	}
	escaped := bytes.Replace(card, []byte(`"ampagent"`), []byte(`"\u0061mpagent"`), 1)
	for name, c := range map[string][]byte{"indented": pretty.Bytes(), "reordered with defaults": reordered, "escaped": escaped} {
		if _, err := Verify(c, vectorPub(), ""); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSwappedKidIsRefused: a signature is bound to the key its kid names.
func TestSwappedKidIsRefused(t *testing.T) {
	card := signedVector(t)
	ours := DIDKeyID(vectorPub())
	payload, _ := Payload(vectorCard(t))
	// The attacker's key signs, the header claims ours.
	h, _ := json.Marshal(map[string]string{"alg": Alg, "kid": ours, "typ": Typ})
	forged := ed25519.Sign(otherKey(), signingInput(base64.RawURLEncoding.EncodeToString(h), payload))
	_, err := Verify(withSignature(t, card, map[string]string{"alg": Alg, "kid": ours, "typ": Typ}, forged), vectorPub(), "")
	wantName(t, err, ErrBadSignature)
	// Our signature, its kid changed to another key's: no signature names
	// ours, and the other key's check fails.
	sig := getSignature(t, card)
	theirs := DIDKeyID(otherKey().Public().(ed25519.PublicKey))
	swapped := withSignature(t, card, map[string]string{"alg": Alg, "kid": theirs, "typ": Typ}, sig)
	_, err = Verify(swapped, vectorPub(), "")
	wantName(t, err, ErrKidMismatch)
	_, err = Verify(swapped, otherKey().Public().(ed25519.PublicKey), "")
	wantName(t, err, ErrBadSignature)
	// The right kid, verified with another key: a did:key kid is its
	// key, so the pair is refused before any signature is looked at
	// (A2A-11).
	_, err = Verify(card, otherKey().Public().(ed25519.PublicKey), ours)
	wantName(t, err, ErrKidMismatch)
	// An unprotected header cannot supply or repeat the kid.
	hdr := edit(t, card, func(o jcs.Object) jcs.Object {
		s := get(o, "signatures").([]any)[0].(jcs.Object)
		return set(o, "signatures", []any{append(s, jcs.Member{Name: "header", Value: jcs.Object{{Name: "kid", Value: theirs}}})})
	})
	_, err = Verify(hdr, vectorPub(), "")
	wantName(t, err, ErrSignatureMalformed)
}

func getSignature(t *testing.T, card []byte) []byte {
	t.Helper()
	var c Card
	if err := json.Unmarshal(card, &c); err != nil || len(c.Signatures) != 1 {
		t.Fatalf("card: %v", err)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(c.Signatures[0].Signature)
	return sig
}

// TestAlgNoneAndHS256AreRefused: the algorithm comes from the verifier, not
// the card: "none" with an empty signature, and HS256 keyed with the public
// key (the classic confusion), are refused by name.
func TestAlgNoneAndHS256AreRefused(t *testing.T) {
	card := signedVector(t)
	ours := DIDKeyID(vectorPub())
	payload, _ := Payload(vectorCard(t))
	hs := map[string]string{"alg": "HS256", "kid": ours, "typ": Typ}
	h, _ := json.Marshal(hs)
	mac := hmac.New(sha256.New, vectorPub())
	mac.Write(signingInput(base64.RawURLEncoding.EncodeToString(h), payload))
	for name, c := range map[string][]byte{
		"none":  withSignature(t, card, map[string]string{"alg": "none", "kid": ours, "typ": Typ}, nil),
		"HS256": withSignature(t, card, hs, mac.Sum(nil)),
		"ES256": withSignature(t, card, map[string]string{"alg": "ES256", "kid": ours, "typ": Typ}, getSignature(t, card)),
	} {
		_, err := Verify(c, vectorPub(), "")
		if !errors.Is(err, ErrAlgUnsupported) {
			t.Errorf("%s: got %v, want %s", name, err, ErrAlgUnsupported)
		}
	}
	for name, hdr := range map[string]any{
		"no typ":  map[string]string{"alg": Alg, "kid": ours},
		"typ JWT": map[string]string{"alg": Alg, "kid": ours, "typ": "JWT"},
		"crit":    map[string]any{"alg": Alg, "kid": ours, "typ": Typ, "crit": []string{"b64"}, "b64": false},
		"unknown": map[string]any{"alg": Alg, "kid": ours, "typ": Typ, "x5u": "https://attacker.example/"},
	} {
		_, err := Verify(withSignature(t, card, hdr, getSignature(t, card)), vectorPub(), "")
		if !errors.Is(err, ErrHeaderUnsupported) {
			t.Errorf("%s: got %v, want %s", name, err, ErrHeaderUnsupported)
		}
	}
}

// TestSignatureOverANonCanonicalFormFails: a signer that signs the card's
// bytes as written, not its RFC 8785 form, makes a card nobody verifies.
func TestSignatureOverANonCanonicalFormFails(t *testing.T) {
	card := signedVector(t)
	ours := DIDKeyID(vectorPub())
	unsigned := *vectorCard(t)
	written, _ := json.Marshal(&unsigned) // struct order, HTML escapes: not JCS
	if canon, _ := Payload(&unsigned); bytes.Equal(written, canon) {
		t.Fatal("the test needs a form that differs from the canonical one")
	}
	hdr := map[string]string{"alg": Alg, "kid": ours, "typ": Typ}
	h, _ := json.Marshal(hdr)
	sig := ed25519.Sign(vectorKey(), signingInput(base64.RawURLEncoding.EncodeToString(h), written))
	_, err := Verify(withSignature(t, card, hdr, sig), vectorPub(), "")
	wantName(t, err, ErrBadSignature)
}

// TestDuplicateMemberNamesAreRefused: a card, or a protected header, that
// names a member twice is read differently by different parsers: refused
// before any signature is checked.
func TestDuplicateMemberNamesAreRefused(t *testing.T) {
	card := signedVector(t)
	dup := bytes.Replace(card, []byte(`"name":"ampagent"`), []byte(`"name":"ampagent","name":"evil"`), 1)
	_, err := Verify(dup, vectorPub(), "")
	wantName(t, err, ErrDuplicateMember)
	nested := bytes.Replace(card, []byte(`"description":"adds formality"`), []byte(`"description":"adds formality","description":"x"`), 1)
	_, err = Verify(nested, vectorPub(), "")
	wantName(t, err, ErrDuplicateMember)
	ours := DIDKeyID(vectorPub())
	raw := `{"alg":"EdDSA","kid":"` + ours + `","typ":"JOSE","kid":"did:key:other#x"}`
	hdr := edit(t, card, func(o jcs.Object) jcs.Object {
		return set(o, "signatures", []any{jcs.Object{{Name: "protected", Value: base64.RawURLEncoding.EncodeToString([]byte(raw))}, {Name: "signature", Value: base64.RawURLEncoding.EncodeToString(getSignature(t, card))}}})
	})
	_, err = Verify(hdr, vectorPub(), "")
	wantName(t, err, ErrSignatureMalformed)
}

// TestOversizedCardIsRefusedUnread: a card over MaxCardBytes, or with more
// than MaxSignatures signatures, is refused by name.
func TestOversizedCardIsRefusedUnread(t *testing.T) {
	big := append(signedVector(t), bytes.Repeat([]byte(" "), MaxCardBytes)...)
	_, err := Verify(big, vectorPub(), "")
	wantName(t, err, ErrTooLarge)
	card := signedVector(t)
	many := edit(t, card, func(o jcs.Object) jcs.Object {
		s := get(o, "signatures").([]any)
		for len(s) <= MaxSignatures {
			s = append(s, s[0])
		}
		return set(o, "signatures", s)
	})
	_, err = Verify(many, vectorPub(), "")
	wantName(t, err, ErrTooLarge)
}

// TestHostileCardsAreRefusedByName: each way a card can be wrong has its
// name, and no error quotes the card.
func TestHostileCardsAreRefusedByName(t *testing.T) {
	card := signedVector(t)
	const marker = "MARKER-\u202e-\x1b[2J"
	for _, tc := range []struct {
		name string
		card []byte
		want amp.ErrName
	}{
		{"not json", []byte(`{"name":"` + marker), ErrMalformed},
		{"an array", []byte(`[1]`), ErrMalformed},
		{"lone surrogate", bytes.Replace(card, []byte(`"ampagent"`), []byte(`"\ud800"`), 1), ErrMalformed},
		{"number out of range", bytes.Replace(card, []byte(`"name":`), []byte(`"x":1e999,"name":`), 1), ErrMalformed},
		{"non-canonical number", bytes.Replace(card, []byte(`"name":`), []byte(`"x":1.0,"name":`), 1), ErrNumberNotCanonical},
		{"non-canonical exponent", bytes.Replace(card, []byte(`"name":`), []byte(`"x":1E2,"name":`), 1), ErrNumberNotCanonical},
		{"unsigned", edit(t, card, func(o jcs.Object) jcs.Object { return o.Without("signatures") }), ErrUnsigned},
		{"empty signatures", edit(t, card, func(o jcs.Object) jcs.Object { return set(o, "signatures", []any{}) }), ErrUnsigned},
		{"signatures not an array", edit(t, card, func(o jcs.Object) jcs.Object { return set(o, "signatures", marker) }), ErrSignatureMalformed},
		{"bad base64", edit(t, card, func(o jcs.Object) jcs.Object {
			return set(o, "signatures", []any{jcs.Object{{Name: "protected", Value: "e30=\n"}, {Name: "signature", Value: ""}}})
		}), ErrSignatureMalformed},
		{"extra signature member", edit(t, card, func(o jcs.Object) jcs.Object {
			s := get(o, "signatures").([]any)[0].(jcs.Object)
			return set(o, "signatures", []any{append(s, jcs.Member{Name: marker, Value: true})})
		}), ErrSignatureMalformed},
		{"no skills", edit(t, card, func(o jcs.Object) jcs.Object { return set(o, "skills", []any{}) }), ErrBadSignature},
	} {
		_, err := Verify(tc.card, vectorPub(), "")
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "MARKER") {
			t.Errorf("%s: the error quotes the card: %q", tc.name, err)
		}
	}
}

// TestSignRefusesACardThatIsNotAnAgentCard: a card without a skill, or
// without a key id, is never signed; the card is left as it was.
func TestSignRefusesACardThatIsNotAnAgentCard(t *testing.T) {
	c := vectorCard(t)
	c.Skills = nil
	_, err := Sign(c, vectorKey(), DIDKeyID(vectorPub()))
	wantName(t, err, ErrInvalid)
	if c.Signatures != nil {
		t.Fatal("a refused card was changed")
	}
	_, err = Sign(vectorCard(t), vectorKey(), "")
	wantName(t, err, ErrInvalid)
	_, err = New(Options{Name: "a", Version: "1", URL: "https://x"}, nil)
	wantName(t, err, ErrInvalid)
}

// TestSecondSignatureForKeyRotation: a card signed by two keys verifies
// under each; a foreign signature (another alg) is skipped by form.
func TestSecondSignatureForKeyRotation(t *testing.T) {
	c := vectorCard(t)
	if _, err := Sign(c, vectorKey(), DIDKeyID(vectorPub())); err != nil {
		t.Fatal(err)
	}
	other := otherKey()
	out, err := Sign(c, other, "did:web:agent.example#key-2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(out, vectorPub(), ""); err != nil {
		t.Fatal(err)
	}
	if v, err := Verify(out, other.Public().(ed25519.PublicKey), "did:web:agent.example#key-2"); err != nil || v.KeyID != "did:web:agent.example#key-2" {
		t.Fatalf("%v %v", v, err)
	}
}
