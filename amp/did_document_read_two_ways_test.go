package amp

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestDIDDocumentThatJSONReadersReadApartIsRefused covers a DID document
// whose signing key, revocation or subject a case-sensitive JSON reader
// (Python's json, jq, JavaScript, a reviewer) and encoding/json read
// differently (docs/SPEC-DECISIONS.md AMP-23).
//
// Attack: the publisher of a DID document (in a bundle, or a file given to
// ampagent) writes a member twice, or a second spelling of it in another
// letter case after the one a reviewer reads. encoding/json keeps the last
// and matches names ignoring case, so ParseDIDDocument took the second
// key (key B where everyone else sees key A), un-revoked a revoked key
// (`"revoked": "2020-…", "Revoked": ""`), or made the document another
// DID's (`"id": "did:web:a", "ID": "did:web:b"`).
//
// Before: every document below parsed, with the second reading.
// Should: 3001 invalid_did_document; a document that reads one way, with
// unknown members or other spellings in objects nothing decodes into a
// struct, still parses.
func TestDIDDocumentThatJSONReadersReadApartIsRefused(t *testing.T) {
	keyA := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)
	keyB := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32)).Public().(ed25519.PublicKey)
	ma, mb := EncodeMultikey(KeyEd25519, keyA), EncodeMultikey(KeyEd25519, keyB)
	xa, xb := base64.RawURLEncoding.EncodeToString(keyA), base64.RawURLEncoding.EncodeToString(keyB)
	doc := func(method, rest string) string {
		return `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","controller":"did:web:a.example",` + method + `}],"assertionMethod":["#k"]` + rest + `}`
	}
	multikey := `"type":"Multikey","publicKeyMultibase":"` + ma + `"`
	relay := `,"service":[{"id":"#r","type":"AgentMessagingRelay",`
	for _, c := range []struct {
		name, doc string
	}{
		{"a key given twice", doc(multikey+`,"publicKeyMultibase":"`+mb+`"`, "")},
		{"a jwk x given again as X", doc(`"type":"JsonWebKey2020","publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":"`+xa+`","X":"`+xb+`"}`, "")},
		{"a revocation undone by Revoked", doc(multikey+`,"revoked":"2020-01-01T00:00:00Z","Revoked":""`, "")},
		{"an expiry undone by EXPIRES", doc(multikey+`,"expires":"2020-01-01T00:00:00Z","EXPIRES":""`, "")},
		{"the subject renamed by ID", `{"id":"did:web:a.example","ID":"did:web:b.example","verificationMethod":[{"id":"did:web:b.example#k","type":"Multikey","publicKeyMultibase":"` + ma + `"}],"assertionMethod":["did:web:b.example#k"]}`},
		{"a key spelt with a long s", doc(`"type":"Multikey","publicKeyMultibaſe":"`+mb+`"`, "")},
		{"a relationship given twice", doc(multikey, `,"assertionMethod":[]`)},
		{"a method type given twice", doc(multikey+`,"type":"Ed25519VerificationKey2020"`, "")},
		{"a relay endpoint given twice", doc(multikey, relay+`"serviceEndpoint":"did:web:r1.example","serviceEndpoint":"did:web:r2.example"}]`)},
		{"a relay uri given again as URI", doc(multikey, relay+`"serviceEndpoint":{"uri":"did:web:r1.example","URI":"did:web:r2.example"}}]`)},
		{"a member twice where nothing reads it", doc(multikey, `,"alsoKnownAs":[{"n":1,"n":2}]`)},
		{"the subject given again escaped", `{"id":"did:web:a.example","\u0069d":"did:web:b.example"}`},
		{"a key given twice among many members", doc(multikey+manyMembers(40)+`,"publicKeyMultibase":"`+mb+`"`, "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDIDDocument([]byte(c.doc))
			if !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
				var key []byte
				if d != nil {
					if k, kerr := d.SigningKey(d.ID, time.Unix(1_800_000_000, 0)); kerr == nil {
						key = k.PublicKey
					}
				}
				t.Fatalf("got %v (document %v, signing key B: %v), want 3001 invalid_did_document", err, d != nil, bytes.Equal(key, keyB))
			}
			if strings.Contains(err.Error(), "did:web") || strings.Contains(err.Error(), ma) {
				t.Fatalf("error echoes the document: %v", err)
			}
		})
	}
	// The check walks the bytes once: a document of the largest size made
	// of tiny objects costs about its size (the copy the test makes).
	tiny := `{"id":"did:web:a.example","alsoKnownAs":[` + strings.Repeat(`{"a":0},`, MaxDIDDocumentSize/8-8) + `{"a":0}]}`
	if alloc := testalloc.Least(func() { _ = checkDIDJSON([]byte(tiny)) }); alloc > 2*uint64(len(tiny)) {
		t.Errorf("checking a %d-byte document allocated %d bytes, want at most twice its size", len(tiny), alloc)
	}
	// Documents that read one way still parse: unknown members, and other
	// spellings inside objects nothing decodes into a struct.
	for _, ok := range []string{
		doc(multikey+`,"Comment":"x"`, ""),
		doc(multikey, `,"@context":["https://www.w3.org/ns/did/v1",{"ID":"@id","Type":"@type"}]`),
		doc(multikey, relay+`"serviceEndpoint":[{"uri":"did:web:r1.example","accept":["didcomm/v2"]},"https://r.example"]}]`),
	} {
		d, err := ParseDIDDocument([]byte(ok))
		if err != nil {
			t.Fatalf("a document that reads one way: %v", err)
		}
		if k, err := d.SigningKey(d.ID, time.Unix(1_800_000_000, 0)); err != nil || !bytes.Equal(k.PublicKey, keyA) {
			t.Fatalf("signing key %x, %v; want key A", k.PublicKey, err)
		}
	}
}

// manyMembers returns n members "m0": 0, "m1": 0, ..., each after a comma.
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"m%d":0`, i)
	}
	return b.String()
}
