package amp

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// did:key vectors from third-party implementations, so that our
// Edwards-to-Montgomery map is checked against someone else's.
func TestDIDKeyThirdPartyVectors(t *testing.T) {
	// ACA-Py (openwallet-foundation/acapy, aries_cloudagent/did/tests/test_dids.py).
	doc, err := DIDKeyDocument("did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := doc.AgreementKeys(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := "did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th#z6LShpNhGwSupbB7zjuivH156vhLJBDDzmQtA4BY9S94pe1K"; ks[0].ID != want {
		t.Fatalf("key agreement id %s, want %s", ks[0].ID, want)
	}
	if got, want := base58Encode(ks[0].PublicKey), "79CXkde3j8TNuMXxPdV7nLUrT2g7JAEjH5TreyVY7GEZ"; got != want {
		t.Fatalf("x25519 key %s, want %s", got, want)
	}
	sk, err := doc.SigningKey(doc.ID, time.Now())
	if err != nil || base58Encode(sk.PublicKey) != "8HH5gYEeNc3z7PYXmd54d4x6qAfCNrqQqEB3nS7Zfu7K" {
		t.Fatalf("signing key %v %v", sk, err)
	}
	// transmute-industries/did-key.js fixtures: the X25519 private key of an
	// Ed25519 seed.
	seed, _ := hex.DecodeString("9b937b81322d816cfab9d5a3baacc9b2a5febe4b149f126b3630f93a29527017")
	priv := ed25519.NewKeyFromSeed(seed)
	if got := hex.EncodeToString(priv.Public().(ed25519.PublicKey)); got != "095f9a1a595dde755d82786864ad03dfa5a4fbd68832566364e2b65e13cc9e44" {
		t.Fatalf("ed25519 public %s", got)
	}
	x, err := AgreementKeyFromEd25519(priv)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(x.Private[:]); got != "784f007ed065f6f0ceae66a19e9cb6590ea0c97ecec758d858e3f75d9f336f62" {
		t.Fatalf("x25519 private %s", got)
	}
	if got := hex.EncodeToString(x.Public[:]); got != "1150c79f402e26a82afee189c4648778ff91605aee8a96d4ca922c30e6482b09" {
		t.Fatalf("x25519 public %s", got)
	}
}

// The two derivations (from the private seed, from the public point) agree
// for many keys.
func TestX25519DerivationsAgree(t *testing.T) {
	for i := 0; i < 64; i++ {
		seed := make([]byte, 32)
		seed[0], seed[31] = byte(i), byte(255-i)
		priv := ed25519.NewKeyFromSeed(seed)
		x, err := AgreementKeyFromEd25519(priv)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := X25519PublicFromEd25519(priv.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		if pub != x.Public {
			t.Fatalf("seed %d: map gives %x, private derivation %x", i, pub, x.Public)
		}
	}
	// Not on the curve, non-canonical, or the identity.
	bad := [][]byte{
		hx("0200000000000000000000000000000000000000000000000000000000000000"), // y = 2: x^2 not a square
		hx("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), // y >= p
		hx("0100000000000000000000000000000000000000000000000000000000000000"), // y = 1
		hx("01"),
	}
	for _, b := range bad {
		if _, err := X25519PublicFromEd25519(b); err == nil {
			t.Errorf("%x accepted", b)
		}
	}
}

func TestDIDKeyRoundTrip(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	did := DIDKey(priv.Public().(ed25519.PublicKey))
	if !strings.HasPrefix(did, "did:key:z6Mk") {
		t.Fatalf("did %s", did)
	}
	doc, err := ResolveDID(context.Background(), nil, did+"#anything")
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDIDDocument(js)
	if err != nil {
		t.Fatalf("own output does not parse: %v\n%s", err, js)
	}
	a, _ := doc.SigningKey(did, time.Now())
	b, _ := back.SigningKey(did, time.Now())
	if a.ID != b.ID || string(a.PublicKey) != string(b.PublicKey) {
		t.Fatal("signing key changed in a json round trip")
	}
	// An X25519-only did:key cannot sign.
	xdoc, err := DIDKeyDocument("did:key:z6LShpNhGwSupbB7zjuivH156vhLJBDDzmQtA4BY9S94pe1K")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := xdoc.SigningKey(xdoc.ID, time.Now()); !errors.Is(err, ErrName("no_eligible_key")) {
		t.Fatalf("x25519 did:key signing key: %v", err)
	}
	for _, bad := range []string{"did:key:", "did:key:zzzz", "did:key:z6Mk", "did:key:abc", "did:web:x"} {
		if _, err := DIDKeyDocument(bad); err == nil {
			t.Errorf("%s expanded", bad)
		}
	}
}

func method(id, typ, kt string, pub []byte, extra string) string {
	var key string
	switch kt {
	case "mk":
		key = `"publicKeyMultibase":"` + EncodeMultikey(KeyEd25519, pub) + `"`
	case "xmk":
		key = `"publicKeyMultibase":"` + EncodeMultikey(KeyX25519, pub) + `"`
	}
	return `{"id":"` + id + `","type":"` + typ + `","controller":"did:web:a.example",` + key + extra + `}`
}

// TestSigningKeySelection is RFC 001 §8.9, rule by rule.
func TestSigningKeySelection(t *testing.T) {
	// Distinct keys, none of small order (CheckEd25519PublicKey).
	pk := func(b byte) []byte { k := make([]byte, 32); k[0], k[1] = b, 0x5a; return k }
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	doc := `{"id":"did:web:a.example","verificationMethod":[` +
		method("#b", "Multikey", "mk", pk(2), "") + "," +
		method("#a", "Multikey", "mk", pk(1), "") + "," +
		method("#0-revoked", "Multikey", "mk", pk(3), `,"revoked":"2026-01-01T00:00:00Z"`) + "," +
		method("#0-expired", "Multikey", "mk", pk(4), `,"expires":"2026-11-01T00:00:00Z"`) + "," +
		method("#0-x", "Multikey", "xmk", pk(5), "") + "," +
		method("#auth", "Multikey", "mk", pk(6), "") + "," +
		method("#unlisted", "Multikey", "mk", pk(7), "") + "," +
		method("#future-expiry", "Multikey", "mk", pk(8), `,"expires":"2027-01-01T00:00:00Z"`) +
		`],"assertionMethod":["#b","#a","#0-revoked","#0-expired","#0-x","did:web:other.example#z"],` +
		`"authentication":["#auth"],"keyAgreement":["#0-x"]}`
	d, err := ParseDIDDocument([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, from, want string
		err              ErrName
	}{
		{"bare did: smallest active ed25519 assertionMethod id", "did:web:a.example", "did:web:a.example#a", ""},
		{"fragment names a method exactly", "did:web:a.example#b", "did:web:a.example#b", ""},
		{"fragment may name an authentication key", "did:web:a.example#auth", "did:web:a.example#auth", ""},
		{"revoked key is not eligible", "did:web:a.example#0-revoked", "", "no_eligible_key"},
		{"expired key is not eligible", "did:web:a.example#0-expired", "", "no_eligible_key"},
		{"x25519 key cannot sign", "did:web:a.example#0-x", "", "no_eligible_key"},
		{"key not authorized for signing", "did:web:a.example#unlisted", "", "no_eligible_key"},
		{"unknown fragment", "did:web:a.example#nope", "", "no_eligible_key"},
		{"document of another did", "did:web:b.example", "", "no_eligible_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := d.SigningKey(tt.from, now)
			if tt.err != "" {
				if !errors.Is(err, tt.err) || !errors.Is(err, CodeUnauthorized) {
					t.Fatalf("got %v %v, want 3001 %s", m.ID, err, tt.err)
				}
				return
			}
			if err != nil || m.ID != tt.want {
				t.Fatalf("got %s %v, want %s", m.ID, err, tt.want)
			}
		})
	}
	// Fallback to authentication when assertionMethod has nothing eligible.
	fb, err := ParseDIDDocument([]byte(`{"id":"did:web:a.example","verificationMethod":[` +
		method("#z", "Multikey", "mk", pk(1), "") + "," + method("#y", "Multikey", "mk", pk(2), "") + "," +
		method("#r", "Multikey", "mk", pk(3), `,"revoked":"2020-01-01T00:00:00Z"`) +
		`],"assertionMethod":["#r"],"authentication":["#z","#y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := fb.SigningKey("did:web:a.example", now); err != nil || m.ID != "did:web:a.example#y" {
		t.Fatalf("fallback: %s %v", m.ID, err)
	}
	// Key agreement: smallest active id.
	ks, err := d.AgreementKeys(now)
	if err != nil || ks[0].ID != "did:web:a.example#0-x" {
		t.Fatalf("agreement: %v %v", ks, err)
	}
	// Once "#future-expiry" expires it drops out.
	if _, err := d.SigningKey("did:web:a.example#future-expiry", now); err == nil {
		t.Fatal("a key not referenced by a relationship was selected")
	}
}

func TestParseDIDDocumentRefuses(t *testing.T) {
	pub := make([]byte, 32)
	pub[0] = 0x5a // y = 90: not of small order (CheckEd25519PublicKey)
	jwk := func(extra string) string {
		return `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"JsonWebKey2020","controller":"did:web:a.example","publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":"WgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"` + extra + `}}],"assertionMethod":["#k"]}`
	}
	if _, err := ParseDIDDocument([]byte(jwk(""))); err != nil {
		t.Fatalf("valid jwk document refused: %v", err)
	}
	tests := map[string]string{
		"not json":             `{`,
		"no id":                `{"verificationMethod":[]}`,
		"id not a did":         `{"id":"https://example.com"}`,
		"private jwk":          jwk(`,"d":"AAAA"`),
		"private multibase":    `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"Multikey","publicKeyMultibase":"` + EncodeMultikey(KeyEd25519, pub) + `","privateKeyMultibase":"zabc"}]}`,
		"duplicate method id":  `{"id":"did:web:a.example","verificationMethod":[` + method("#k", "Multikey", "mk", pub, "") + "," + method("#k", "Multikey", "mk", pub, "") + `]}`,
		"bad multibase":        `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"Multikey","publicKeyMultibase":"z0OIl"}]}`,
		"short jwk":            `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"JsonWebKey2020","publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":"AAAA"}}]}`,
		"type and key differ":  `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"Ed25519VerificationKey2020","publicKeyMultibase":"` + EncodeMultikey(KeyX25519, pub) + `"}]}`,
		"bad date":             `{"id":"did:web:a.example","verificationMethod":[` + method("#k", "Multikey", "mk", pub, `,"revoked":"yesterday"`) + `]}`,
		"relationship not url": `{"id":"did:web:a.example","assertionMethod":["key-1"]}`,
		"too large":            `{"id":"did:web:a.example","x":"` + strings.Repeat("a", MaxDIDDocumentSize) + `"}`,
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDIDDocument([]byte(doc))
			if !errors.Is(err, ErrName("invalid_did_document")) || !errors.Is(err, CodeUnauthorized) {
				t.Fatalf("got %v, want 3001 invalid_did_document", err)
			}
			if strings.Contains(err.Error(), "AAAA") || strings.Contains(err.Error(), "yesterday") {
				t.Fatalf("error echoes input: %v", err)
			}
		})
	}
	// Unknown method types are ignored, not fatal.
	d, err := ParseDIDDocument([]byte(`{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"EcdsaSecp256k1VerificationKey2019","publicKeyHex":"00"}],"assertionMethod":["#k"]}`))
	if err != nil || len(d.Methods) != 0 {
		t.Fatalf("unknown method type: %v %v", d, err)
	}
}

func TestValidDID(t *testing.T) {
	good := []string{"did:web:example.com", "did:web:example.com:agent:alice", "did:key:z6Mk", "did:web:a.example#key-1", "did:example:123%20x"}
	bad := []string{"", "did:", "did:web", "did:web:", "did:Web:x", "did:web:x:", "did:web:x#", "did:web:x y", "did:web:x%2", "DID:web:x", "did:web:x#a b", strings.Repeat("d", 3000)}
	for _, s := range good {
		if !ValidDID(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range bad {
		if ValidDID(s) {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestBase58(t *testing.T) {
	for _, tt := range []struct{ hex, b58 string }{
		{"", ""},
		{"00", "1"},
		{"0000ff", "115Q"},
		{"61", "2g"},
		{"626262", "a3gV"},
		{"516b6fcd0f", "ABnLTmg"},
		{"00eb15231dfceb60925886b67d065299925915aeb172c06647", "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"},
	} {
		b, _ := hex.DecodeString(tt.hex)
		if got := base58Encode(b); got != tt.b58 {
			t.Errorf("encode %s: %s, want %s", tt.hex, got, tt.b58)
		}
		if tt.b58 == "" {
			continue
		}
		back, err := base58Decode(tt.b58)
		if err != nil || hex.EncodeToString(back) != tt.hex {
			t.Errorf("decode %s: %x %v", tt.b58, back, err)
		}
	}
	if _, err := base58Decode("0OIl"); err == nil {
		t.Error("invalid base58 accepted")
	}
}
