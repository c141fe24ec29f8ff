package amp

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"
)

// TestDIDMethodThatAnotherDIDControlsDoesNotActForThisDID covers a
// verification method whose controller is not the document's subject
// (docs/SPEC-DECISIONS.md AMP-28).
//
// Attack: the publisher of the DID document of did:web:a.example (in a
// bundle, or a file given to ampagent) lists a method whose controller
// is did:web:b.example, or omits the controller, and names it in
// assertionMethod, authentication or keyAgreement. DID Core §5.2 makes
// the controller a required DID and the controller of a method the
// entity that holds its key: a reviewer of the bundle reads the key as
// b's. SigningKey selected it to authenticate messages from a (and, by
// the smallest id, before a key a controls), and AgreementKeys gave it
// as the key to encrypt to a, so b read what was sent to a.
//
// Before: every method below was selected; the documents without a
// controller, or with one that is not a DID, parsed. Should: a method
// another DID controls parses but is never selected (3001
// no_eligible_key when it is the only one); a method without a
// controller, or whose controller is not a DID, is 3001
// invalid_did_document. A document built in Go with no controller, as
// cmd/ampagent builds one, still signs.
func TestDIDMethodThatAnotherDIDControlsDoesNotActForThisDID(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	key := func(seed byte) ed25519.PublicKey {
		return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32)).Public().(ed25519.PublicKey)
	}
	x, err := X25519PublicFromEd25519(key(3))
	if err != nil {
		t.Fatal(err)
	}
	method := func(id, controller string, t KeyType, pub []byte) string {
		c := ""
		if controller != "-" {
			c = `"controller":"` + controller + `",`
		}
		return `{"id":"` + id + `","type":"Multikey",` + c + `"publicKeyMultibase":"` + EncodeMultikey(t, pub) + `"}`
	}
	const a, b = "did:web:a.example", "did:web:b.example"
	others := `{"id":"did:web:a.example","verificationMethod":[` +
		method("#k", b, KeyEd25519, key(1)) + "," + method("#x", b, KeyX25519, x[:]) +
		`],"assertionMethod":["#k"],"authentication":["#k"],"keyAgreement":["#x"]}`
	doc, err := ParseDIDDocument([]byte(others))
	if err != nil {
		t.Fatalf("a method another DID controls: %v", err)
	}
	if len(doc.Methods) != 2 || doc.Methods[0].Controller != b {
		t.Fatalf("the methods are not kept with their controller: %+v", doc.Methods)
	}
	for _, from := range []string{a, a + "#k"} {
		if m, err := doc.SigningKey(from, now); !errors.Is(err, ErrName("no_eligible_key")) {
			t.Errorf("SigningKey(%s) = %s, %v; want 3001 no_eligible_key for b's key", from, m.ID, err)
		}
	}
	if ms, err := doc.AgreementKeys(now); !errors.Is(err, ErrName("no_eligible_key")) {
		t.Errorf("AgreementKeys = %d keys, %v; want 3001 no_eligible_key for b's key", len(ms), err)
	}

	// b's key has the smaller id: a's own is the one selected.
	both := `{"id":"did:web:a.example","verificationMethod":[` +
		method("#a", b, KeyEd25519, key(1)) + "," + method("#z", a, KeyEd25519, key(2)) + `],"assertionMethod":["#a","#z"]}`
	doc, err = ParseDIDDocument([]byte(both))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := doc.SigningKey(a, now); err != nil || m.ID != a+"#z" {
		t.Errorf("SigningKey(%s) = %s, %v; want %s#z, the key a controls", a, m.ID, err, a)
	}

	for _, c := range []struct{ name, controller string }{
		{"no controller", "-"},
		{"an empty controller", ""},
		{"a url", "https://a.example"},
		{"a did url with a fragment", a + "#k"},
		{"a did url with a path", a + "/k"},
		{"a bare method name", "did:web"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := `{"id":"did:web:a.example","verificationMethod":[` + method("#k", c.controller, KeyEd25519, key(1)) + `],"assertionMethod":["#k"]}`
			if _, err := ParseDIDDocument([]byte(d)); !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
				t.Fatalf("got %v, want 3001 invalid_did_document", err)
			}
		})
	}

	// A method of a type this parser does not read is never selected,
	// and is not checked.
	if _, err := ParseDIDDocument([]byte(`{"id":"did:web:a.example","verificationMethod":[{"id":"#e","type":"EcdsaSecp256k1VerificationKey2019","publicKeyHex":"00"}]}`)); err != nil {
		t.Errorf("a method of another type without a controller: %v", err)
	}
	built := &DIDDocument{ID: a, Methods: []VerificationMethod{{ID: a + "#k", Type: "Multikey", KeyType: KeyEd25519, PublicKey: key(1)}},
		AssertionMethod: []string{a + "#k"}}
	if _, err := built.SigningKey(a, now); err != nil {
		t.Errorf("a document built in Go without a controller: %v", err)
	}
}
