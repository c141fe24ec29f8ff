package amp

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDIDDocumentWhoseUnusedServiceHasAMapEndpointIsNotRefused covers a
// DID document refused whole for a service entry the agent never reads
// (docs/SPEC-DECISIONS.md AMP-25).
//
// Threat: a did:web publisher follows the DIF Well-Known DID
// Configuration and lists a "LinkedDomains" service whose serviceEndpoint
// is a map, {"origins": ["https://a.example"]}, as DID Core §5.4 allows
// (a string, a map, or a set of these). ParseDIDDocument held every
// service to the relay's shapes (a map needs "uri" or "routingKeys"), so
// the document, its keys and every bundle that carries it were refused:
// the operator of an air-gapped site cannot authenticate that sender.
//
// Before: every "parses" case with a map of other members was 3001
// invalid_did_document. Should: those parse, with no relay; a relay
// service is read as strictly as before; shapes DID Core does not allow,
// and the member checks of AMP-23, are still refused.
func TestDIDDocumentWhoseUnusedServiceHasAMapEndpointIsNotRefused(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)
	mk := EncodeMultikey(KeyEd25519, key)
	doc := func(endpoint string) string {
		return `{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"Multikey","controller":"did:web:a.example","publicKeyMultibase":"` + mk + `"}],` +
			`"assertionMethod":["#k"],"service":[{"id":"#s","type":"LinkedDomains","serviceEndpoint":` + endpoint + `}]}`
	}
	relay := func(endpoint string) string {
		return strings.Replace(doc(endpoint), `"LinkedDomains"`, `"AgentMessagingRelay"`, 1)
	}
	for _, c := range []struct {
		name, doc string
		relays    string // space-separated; "!" for a refusal
	}{
		{"a map of origins", doc(`{"origins":["https://a.example"]}`), ""},
		{"a set of a map and a url", doc(`[{"origins":["https://a.example","https://b.example"]},"https://c.example"]`), ""},
		{"a map of nested members", doc(`{"a":{"b":{"c":["x",1,true,null]}},"n":7}`), ""},
		{"an empty map", doc(`{}`), ""},
		{"a map beside a relay", strings.TrimSuffix(doc(`{"origins":["https://a.example"]}`), `]}`) + `,{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"did:web:r.example"}]}`, "did:web:r.example"},
		{"a did-like string nobody reads", doc(`"did:"`), ""},
		{"a set of sixteen", doc(`[` + strings.TrimSuffix(strings.Repeat(`{"origins":[]},`, maxServiceEndpoint), ",") + `]`), ""},

		{"a relay whose map names no did", relay(`{"origins":["https://a.example"]}`), "!"},
		{"a relay beside a map of other members", relay(`[{"origins":["https://a.example"]},"did:web:r.example"]`), "!"},
		{"a relay whose string is a did-like non-did", relay(`"did:"`), "!"},
		{"null", doc(`null`), "!"},
		{"a number", doc(`7`), "!"},
		{"a boolean", doc(`true`), "!"},
		{"an empty string", doc(`""`), "!"},
		{"an overlong string", doc(`"https://a.example/` + strings.Repeat("a", maxServiceText) + `"`), "!"},
		{"an empty set", doc(`[]`), "!"},
		{"a set in a set", doc(`[["https://a.example"]]`), "!"},
		{"a number in a set", doc(`["https://a.example",7]`), "!"},
		{"a set of seventeen", doc(`[` + strings.TrimSuffix(strings.Repeat(`{"origins":[]},`, maxServiceEndpoint+1), ",") + `]`), "!"},
		{"a map that names a member twice", doc(`{"origins":["https://a.example"],"origins":["https://b.example"]}`), "!"},
		{"a map with uri in another letter case", doc(`{"URI":"did:web:r.example"}`), "!"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDIDDocument([]byte(c.doc))
			if c.relays == "!" {
				if !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
					t.Fatalf("got %v, want 3001 invalid_did_document", err)
				}
				if strings.Contains(err.Error(), "example") {
					t.Fatalf("the refusal echoes the input: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := strings.Join(d.Relays, " "); got != c.relays {
				t.Fatalf("relays %q, want %q", got, c.relays)
			}
			if k, err := d.SigningKey(d.ID, time.Unix(1_800_000_000, 0)); err != nil || !bytes.Equal(k.PublicKey, key) {
				t.Fatalf("signing key %x, %v", k.PublicKey, err)
			}
		})
	}
}

// TestDIDWebDocumentOfTheCommonShapesParses is a did:web document as
// publishers write them (DID Core §5: @context as a string or a list with
// a map, controller, alsoKnownAs, a JsonWebKey2020 and a Multikey method,
// relative and absolute method ids, a LinkedDomains service with a map
// of origins): it parses, and its keys are the ones a reader sees.
func TestDIDWebDocumentOfTheCommonShapesParses(t *testing.T) {
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32)).Public().(ed25519.PublicKey)
	x, err := X25519PublicFromEd25519(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{4}, 32)).Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	body := `"id":"did:web:a.example","controller":"did:web:a.example","alsoKnownAs":["https://a.example"],` +
		`"verificationMethod":[{"id":"did:web:a.example#jwk-1","type":"JsonWebKey2020","controller":"did:web:a.example",` +
		`"publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(ed) + `"}},` +
		`{"id":"#key-x","type":"Multikey","controller":"did:web:a.example","publicKeyMultibase":"` + EncodeMultikey(KeyX25519, x[:]) + `"}],` +
		`"authentication":["#jwk-1"],"assertionMethod":["did:web:a.example#jwk-1"],"keyAgreement":["#key-x"],` +
		`"service":[{"id":"did:web:a.example#linked","type":"LinkedDomains","serviceEndpoint":{"origins":["https://a.example"]}}]}`
	for _, ctx := range []string{
		`"https://www.w3.org/ns/did/v1"`,
		`["https://www.w3.org/ns/did/v1","https://w3id.org/security/suites/jws-2020/v1",{"@vocab":"https://a.example/#","LinkedDomains":"https://identity.foundation/.well-known/resources/did-configuration/#LinkedDomains"}]`,
	} {
		d, err := ParseDIDDocument([]byte(`{"@context":` + ctx + `,` + body))
		if err != nil {
			t.Fatalf("@context %s: %v", ctx, err)
		}
		now := time.Unix(1_800_000_000, 0)
		if k, err := d.SigningKey("did:web:a.example#jwk-1", now); err != nil || !bytes.Equal(k.PublicKey, ed) {
			t.Fatalf("signing key %x, %v", k.PublicKey, err)
		}
		if ks, err := d.AgreementKeys(now); err != nil || ks[0].ID != "did:web:a.example#key-x" || !bytes.Equal(ks[0].PublicKey, x[:]) {
			t.Fatalf("agreement keys %v, %v", ks, err)
		}
		if len(d.Relays) != 0 {
			t.Fatalf("relays %v from a LinkedDomains service", d.Relays)
		}
	}
}
