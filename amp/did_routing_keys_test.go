package amp

import (
	"errors"
	"strings"
	"testing"
)

// TestDIDRelayWhoseRoutingKeysAreOverTheCapIsRefusedAndAnUnreadServiceIsNot
// covers the one list cap a relay's routingKeys and every other list of a
// DID document share (docs/SPEC-DECISIONS.md AMP-30).
//
// Attack: the publisher of a DID document fills a relay's routingKeys,
// which endpointDIDs decodes one string at a time, with more than 16
// entries (AMP-29), wherever the relay's type is written (before or after
// its serviceEndpoint, a string or a list), in a map alone or in a list,
// or under an escaped member name. The cap is now the walk's
// (didObject.list), as every other list's, instead of a second counter.
//
// The other side: routingKeys in the map of a service that is not an
// AgentMessagingRelay (a DIDComm Messaging service, whose routingKeys
// the DIDComm Messaging specification does not bound) are never decoded,
// so they are held to the document's size alone (AMP-25) and such a
// document parses, relay or not beside it.
func TestDIDRelayWhoseRoutingKeysAreOverTheCapIsRefusedAndAnUnreadServiceIsNot(t *testing.T) {
	const id = `{"id":"did:web:a.example","service":[`
	keys := func(n int) string {
		return `[` + strings.TrimSuffix(strings.Repeat(`"did:web:m.example#k",`, n), ",") + `]`
	}
	over := keys(maxServiceEndpoint + 1)
	for _, c := range []struct {
		name    string
		service string
		refused bool
	}{
		{"a relay, its type first", `{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":{"routingKeys":` + over + `}}`, true},
		{"a relay, its type last", `{"id":"#r","serviceEndpoint":{"uri":"did:web:r.example","routingKeys":` + over + `},"type":"AgentMessagingRelay"}`, true},
		{"a relay among types", `{"id":"#r","type":["X","AgentMessagingRelay"],"serviceEndpoint":{"routingKeys":` + over + `}}`, true},
		{"a relay's map in a list", `{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":["did:web:r.example",{"routingKeys":` + over + `}]}`, true},
		{"a relay's escaped member name", `{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":{"routing\u004beys":` + over + `}}`, true},
		{"a relay at the cap", `{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":{"routingKeys":` + keys(maxServiceEndpoint) + `}}`, false},
		{"a DIDComm service", `{"id":"#d","type":"DIDCommMessaging","serviceEndpoint":{"uri":"https://a.example/dc","accept":["didcomm/v2"],"routingKeys":` + over + `}}`, false},
		{"a DIDComm service of 4,000 keys", `{"id":"#d","type":"DIDCommMessaging","serviceEndpoint":[{"uri":"https://a.example/dc","routingKeys":` + keys(4000) + `}]}`, false},
		{"a DIDComm service beside a relay", `{"id":"#d","type":"DIDCommMessaging","serviceEndpoint":{"routingKeys":` + over + `}},` +
			`{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":{"routingKeys":["did:web:m.example#k"]}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, err := ParseDIDDocument([]byte(id + c.service + `]}`))
			if c.refused {
				if !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
					t.Fatalf("got %v, want 3001 invalid_did_document", err)
				}
				if !strings.Contains(err.Error(), "more than 16 routingKeys") {
					t.Fatalf("refused for another reason: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a document of an unread service's routingKeys: %v", err)
			}
			if strings.Contains(c.service, "AgentMessagingRelay") && (len(doc.Relays) != 1 || doc.Relays[0] != "did:web:m.example") {
				t.Fatalf("relays %q, want did:web:m.example", doc.Relays)
			}
		})
	}
}
