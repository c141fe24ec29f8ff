package amp

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDIDMethodWhoseSecondKeyOtherReadersTakeIsRefused covers a
// verification method that carries two public keys
// (docs/SPEC-DECISIONS.md AMP-26).
//
// Attack: the publisher of a DID document writes one method with key A
// in the property its type names (publicKeyMultibase for Multikey) and
// key B in another verification material property (publicKeyJwk,
// publicKeyBase58, publicKeyHex, ...). DID Core §5.2.1 forbids this
// ("MUST NOT contain multiple verification material properties"), so
// readers differ: ParseDIDDocument takes A by the type, a reader that
// takes the first material it knows, whatever the type, takes B. A
// reviewer of the bundle approves B as the signing key; messages signed
// with A are accepted.
//
// Before: every document below parsed, with key A the signing key.
// Should: 3001 invalid_did_document. A method of a type this parser does
// not read (never selected) still parses with several, and a null or an
// empty string is no key.
func TestDIDMethodWhoseSecondKeyOtherReadersTakeIsRefused(t *testing.T) {
	keyA := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)
	keyB := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32)).Public().(ed25519.PublicKey)
	xA, err := X25519PublicFromEd25519(keyA)
	if err != nil {
		t.Fatal(err)
	}
	mbA, mbB := `"publicKeyMultibase":"`+EncodeMultikey(KeyEd25519, keyA)+`"`, `"publicKeyMultibase":"`+EncodeMultikey(KeyEd25519, keyB)+`"`
	jwkA := `"publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(keyA) + `"}`
	jwkB := `"publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(keyB) + `"}`
	b58A, b58B := `"publicKeyBase58":"`+base58Encode(keyA)+`"`, `"publicKeyBase58":"`+base58Encode(keyB)+`"`
	hexB := `"publicKeyHex":"` + hex.EncodeToString(keyB) + `"`
	b64B := `"publicKeyBase64":"` + base64.StdEncoding.EncodeToString(keyB) + `"`
	pemB := `"publicKeyPem":"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA` + base64.StdEncoding.EncodeToString(keyB) + `\n-----END PUBLIC KEY-----"`
	doc := func(typ, material string) string {
		return `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"` + typ + `","controller":"did:web:a.example",` + material + `}],` +
			`"assertionMethod":["#k"],"keyAgreement":["#k"]}`
	}
	for _, c := range []struct{ name, doc string }{
		{"Multikey with a jwk", doc("Multikey", mbA+","+jwkB)},
		{"Multikey with a jwk first", doc("Multikey", jwkB+","+mbA)},
		{"Multikey with base58", doc("Multikey", mbA+","+b58B)},
		{"Multikey with hex", doc("Multikey", mbA+","+hexB)},
		{"Multikey with base64", doc("Multikey", mbA+","+b64B)},
		{"Multikey with pem", doc("Multikey", mbA+","+pemB)},
		{"Ed25519VerificationKey2020 with a jwk", doc("Ed25519VerificationKey2020", mbA+","+jwkB)},
		{"Ed25519VerificationKey2018 with multibase", doc("Ed25519VerificationKey2018", b58A+","+mbB)},
		{"JsonWebKey2020 with multibase", doc("JsonWebKey2020", jwkA+","+mbB)},
		{"JsonWebKey with base58", doc("JsonWebKey", jwkA+","+b58B)},
		{"X25519KeyAgreementKey2020 with hex", doc("X25519KeyAgreementKey2020", `"publicKeyMultibase":"`+EncodeMultikey(KeyX25519, xA[:])+`",`+hexB)},
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
				t.Fatalf("got %v (signing key A: %v), want 3001 invalid_did_document", err, bytes.Equal(key, keyA))
			}
			if strings.Contains(err.Error(), "did:web") || strings.Contains(err.Error(), EncodeMultikey(KeyEd25519, keyA)) {
				t.Fatalf("error echoes the document: %v", err)
			}
		})
	}
	for _, c := range []struct {
		name, doc string
		kept      int
	}{
		{"a type this parser does not read", doc("EcdsaSecp256k1VerificationKey2019", hexB+`,"publicKeyJwk":{"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"}`), 0},
		{"a null beside the key", doc("Multikey", mbA+`,"publicKeyJwk":null,"publicKeyHex":null`), 1},
		{"an empty string beside the key", doc("Multikey", mbA+`,"publicKeyBase58":"","publicKeyPem":""`), 1},
	} {
		d, err := ParseDIDDocument([]byte(c.doc))
		if err != nil || len(d.Methods) != c.kept {
			t.Fatalf("%s: %v, %v", c.name, d, err)
		}
	}
}
