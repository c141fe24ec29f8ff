package amp

import (
	"strings"
	"testing"
)

// TestRelaysFromDIDDocuments: the relays a DID document trusts to ACK for
// its subject are exactly the DIDs its AgentMessagingRelay services name;
// a service of another type names none; a malformed service, or a relay
// service that names no DID, refuses the whole document (threat: a relay
// the operator never listed getting its ACKs accepted, or a typo silently
// trusting nobody).
func TestRelaysFromDIDDocuments(t *testing.T) {
	doc := func(services string) string {
		return `{"id":"did:web:bob.example","service":[` + services + `]}`
	}
	for _, c := range []struct {
		name   string
		json   string
		relays string // space-separated; "!" for a refusal
	}{
		{"a did endpoint", doc(`{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"did:web:relay.example"}`), "did:web:relay.example"},
		{"a did url endpoint is its did", doc(`{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"did:web:relay.example#inbox"}`), "did:web:relay.example"},
		{"type array and uri map", doc(`{"id":"#r","type":["X","AgentMessagingRelay"],"serviceEndpoint":{"uri":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}}`), "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"},
		{"routing keys, a url ignored", doc(`{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":[{"uri":"https://relay.example/amp","routingKeys":["did:web:m.example#k1"]},"did:web:r2.example"]}`), "did:web:m.example did:web:r2.example"},
		{"another service type names no relay", doc(`{"id":"#h","type":"LinkedDomains","serviceEndpoint":"did:web:relay.example"}`), ""},
		{"no services", `{"id":"did:web:bob.example"}`, ""},
		{"relay service with a url only", doc(`{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"https://relay.example"}`), "!"},
		{"service without an id", doc(`{"type":"AgentMessagingRelay","serviceEndpoint":"did:web:relay.example"}`), "!"},
		{"service without an endpoint", doc(`{"id":"#r","type":"AgentMessagingRelay"}`), "!"},
		{"type not a string", doc(`{"id":"#r","type":7,"serviceEndpoint":"did:web:relay.example"}`), "!"},
		{"endpoint that looks like a did but is not", doc(`{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"did:"}`), "!"},
		{"service id twice", doc(`{"id":"#r","type":"A","serviceEndpoint":"x"},{"id":"#r","type":"B","serviceEndpoint":"y"}`), "!"},
		{"empty endpoint array", doc(`{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":[]}`), "!"},
		{"too many services", doc(strings.TrimSuffix(strings.Repeat(`{"id":"#s","type":"A","serviceEndpoint":"x"},`, maxDIDServices+1), ",")), "!"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDIDDocument([]byte(c.json))
			if c.relays == "!" {
				if err == nil || NameOf(err) != "invalid_did_document" {
					t.Fatalf("accepted (relays %v), err %v", d, err)
				}
				if strings.Contains(err.Error(), "relay.example") {
					t.Fatalf("the refusal echoes the input: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(d.Relays, " "); got != c.relays {
				t.Fatalf("relays %q, want %q", got, c.relays)
			}
		})
	}
}
