package amp

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestDIDDocumentWhoseNestingIsDeepIsRefusedBeforeDecoding covers the
// memory a DID document's nesting costs (docs/SPEC-DECISIONS.md AMP-27).
//
// Attack: the publisher of a DID document (in a bundle, or a file given
// to ampagent) fills the 256 KiB with members nobody reads, nested as
// deep as encoding/json allows (10,000 levels): a serviceEndpoint map, an
// alsoKnownAs, an @context. Every json.Unmarshal of the document and of
// each service grows a parse state with the depth, and checkDIDJSON's
// walk recursed once per level: 12 such services allocated 19.9 MB (76
// times the document) and the document parsed.
//
// Before: every deep document below parsed, the services one allocating
// tens of times its size. Should: 3001 invalid_did_document past 32
// levels (the document at level 1), found before encoding/json reads it,
// so the refusal allocates a small part of the document (16 KiB, for the
// runtime's own, plus a sixteenth); 32 levels, and
// brackets inside strings, still parse.
func TestDIDDocumentWhoseNestingIsDeepIsRefusedBeforeDecoding(t *testing.T) {
	nest := func(levels int) string { return strings.Repeat("[", levels) + strings.Repeat("]", levels) }
	services := func(levels int) string {
		var b strings.Builder
		b.WriteString(`{"id":"did:web:a.example","service":[`)
		for i := 0; i < maxDIDServices; i++ {
			s := fmt.Sprintf(`{"id":"#s%d","type":"LinkedDomains","serviceEndpoint":{"uri":"https://a.example","a":%s}}`, i, nest(levels))
			if b.Len()+len(s)+3 > MaxDIDDocumentSize {
				break
			}
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(s)
		}
		b.WriteString("]}")
		return b.String()
	}
	for _, c := range []struct{ name, doc string }{
		{"an alsoKnownAs at level 33", `{"id":"did:web:a.example","alsoKnownAs":` + nest(32) + `}`},
		{"an @context of objects at level 33", `{"id":"did:web:a.example","@context":` + strings.Repeat(`{"a":`, 32) + `1` + strings.Repeat("}", 32) + `}`},
		{"a relationship entry at level 33", `{"id":"did:web:a.example","assertionMethod":[{"id":"#k","type":"X","a":` + nest(30) + `}]}`},
		{"services nested 9,990 levels", services(9990)},
		{"services nested 100 levels", services(100)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			data := []byte(c.doc)
			alloc := testalloc.Least(func() { _, err = ParseDIDDocument(data) })
			if !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
				t.Fatalf("got %v after allocating %d bytes for %d, want 3001 invalid_did_document", err, alloc, len(data))
			}
			if alloc > 16<<10+uint64(len(data))/16 {
				t.Fatalf("refusing a %d-byte document allocated %d bytes", len(data), alloc)
			}
		})
	}
	for _, ok := range []string{
		`{"id":"did:web:a.example","alsoKnownAs":` + nest(31) + `}`,
		`{"id":"did:web:a.example","alsoKnownAs":["` + strings.Repeat(`[{`, 100) + `"]}`,
		`{"id":"did:web:a.example","alsoKnownAs":["\"` + strings.Repeat(`[`, 100) + `\\"]}`,
		services(28), // the endpoint map at level 4
	} {
		if _, err := ParseDIDDocument([]byte(ok)); err != nil {
			t.Fatalf("a document of 32 levels: %v", err)
		}
	}
}
