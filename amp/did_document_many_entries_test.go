package amp

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestDIDDocumentOfManyTinyEntriesIsRefusedBeforeTheyAreDecoded covers
// memory a DID document's list entries cost (docs/SPEC-DECISIONS.md
// AMP-29).
//
// Attack: the publisher of a DID document (in a bundle, each of its DID
// artifacts; or a file given to ampagent) fills the 256 KiB with one-
// or two-byte entries of a list that ParseDIDDocument decodes entry by
// entry: a relationship, the method list, the services, a service's
// type or serviceEndpoint list, a relay's routingKeys. encoding/json
// made one json.RawMessage or string per entry, and grew the slice,
// before the caps (1,024 methods, 64 services, 8 types, 16 endpoints,
// 16 routing keys) were checked: 131,098 allocations and 17.5 MB, 66
// times the document, for "authentication":[1,1,...].
//
// Before: each document below allocated 7.5 to 18 MB (29 to 69 times
// its size), most over 50,000 allocations. Should: 3001
// invalid_did_document, allocating at most four times the document in
// at most 256 allocations: the lists whose entries are decoded one by
// one are counted first.
func TestDIDDocumentOfManyTinyEntriesIsRefusedBeforeTheyAreDecoded(t *testing.T) {
	fill := func(prefix, entry, suffix string) []byte {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 0; b.Len()+len(entry)+len(suffix)+1 <= MaxDIDDocumentSize; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(entry)
		}
		b.WriteString(suffix)
		return []byte(b.String())
	}
	const id = `{"id":"did:web:a.example",`
	for _, c := range []struct {
		name string
		doc  []byte
	}{
		{"authentication references", fill(id+`"authentication":[`, `"#a"`, `]}`)},
		{"authentication numbers", fill(id+`"authentication":[`, `1`, `]}`)},
		{"keyAgreement numbers", fill(id+`"keyAgreement":[`, `1`, `]}`)},
		{"verificationMethod empty objects", fill(id+`"verificationMethod":[`, `{}`, `]}`)},
		{"four lists of 300 references", []byte(id + `"verificationMethod":[` + strings.Repeat(`1,`, 299) + `1],"authentication":[` + strings.Repeat(`1,`, 299) +
			`1],"assertionMethod":[` + strings.Repeat(`1,`, 299) + `1],"keyAgreement":[` + strings.Repeat(`1,`, 299) + `1]}`)},
		{"services", fill(id+`"service":[`, `1`, `]}`)},
		{"a service's types", fill(id+`"service":[{"id":"#s","serviceEndpoint":"x","type":[`, `""`, `]}]}`)},
		{"a service's endpoints", fill(id+`"service":[{"id":"#s","type":"X","serviceEndpoint":[`, `1`, `]}]}`)},
		{"a relay's endpoints", fill(id+`"service":[{"id":"#s","type":"AgentMessagingRelay","serviceEndpoint":[`, `1`, `]}]}`)},
		{"a relay's routing keys", fill(id+`"service":[{"id":"#s","type":"AgentMessagingRelay","serviceEndpoint":{"routingKeys":[`, `""`, `]}}]}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			allocs := testing.AllocsPerRun(2, func() { _, err = ParseDIDDocument(c.doc) })
			bytes := testalloc.Least(func() { _, err = ParseDIDDocument(c.doc) })
			if !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
				t.Fatalf("got %v, want 3001 invalid_did_document", err)
			}
			if allocs > 256 || bytes > 4*uint64(len(c.doc)) {
				t.Fatalf("refusing a %d-byte document made %.0f allocations of %d bytes", len(c.doc), allocs, bytes)
			}
		})
	}
	// At the caps, documents parse.
	services := ""
	for i := 1; i < maxDIDServices; i++ {
		services += `{"id":"#s` + strconv.Itoa(i) + `","type":"X","serviceEndpoint":"x"},`
	}
	const mk = `"publicKeyMultibase":"z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th"`
	for _, ok := range []string{
		id + `"verificationMethod":[{"id":"#k","type":"Multikey","controller":"did:web:a.example",` + mk + `}],"authentication":[` + strings.Repeat(`"#k",`, 4*maxDIDMethods-2) + `"#k"]}`,
		id + `"service":[` + services + `{"id":"#t","type":["a","a","a","a","a","a","a","a"],` +
			`"serviceEndpoint":["x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x"]}]}`,
		id + `"service":[{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":{"routingKeys":[` + strings.Repeat(`"did:web:r.example#k",`, maxServiceEndpoint-1) + `"did:web:r.example#k"]}}]}`,
	} {
		if _, err := ParseDIDDocument([]byte(ok)); err != nil {
			t.Errorf("a document at the caps: %v", err)
		}
	}
}
