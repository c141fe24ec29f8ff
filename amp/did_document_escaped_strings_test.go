package amp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestDIDDocumentOfManyEscapedStringsIsReadWithoutAnAllocationEach covers
// memory the AMP-23 walk of a DID document (checkDIDJSON) spent on
// strings that hold an escape (docs/SPEC-DECISIONS.md AMP-31).
//
// Attack: the publisher of a DID document (each DID artifact of a bundle,
// walked at admission, at import, at `check` and at each resolution the
// store's cache misses; a file given to ampagent) fills a member nothing
// reads (alsoKnownAs, @context, an unknown member) with short strings
// holding an escape, or with small objects whose member names do. The
// walk decoded each such string, value or name, with json.Unmarshal and
// copied it: a 256 KiB document of "\n" strings, which parses, cost
// 209,679 allocations and 9.6 MB (37 times its size); of {"\n":0}
// objects, 116,489 allocations and 5.4 MB; of {"a\n":0,"b\n":0},
// 5.6 MB.
//
// Should: the document parses as before, and the walk allocates at most
// 64 times in all, within 64 KiB: a string value is skipped, never
// decoded; a member name with an escape is decoded into one buffer the
// walk reuses, exactly as encoding/json reads it (the names still
// compare as before: a name given twice, once escaped, is refused).
func TestDIDDocumentOfManyEscapedStringsIsReadWithoutAnAllocationEach(t *testing.T) {
	fill := func(entry string) []byte {
		var b strings.Builder
		b.WriteString(`{"id":"did:web:a.example","alsoKnownAs":[`)
		for i := 0; b.Len()+len(entry)+3 <= MaxDIDDocumentSize; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(entry)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	for _, c := range []struct{ name, entry string }{
		{"escaped string values", `"\n"`},
		{"escaped unicode values", `"\u00e9"`},
		{"objects of an escaped name", `{"\n":0}`},
		{"objects of two escaped names", `{"a\n":0,"b\n":0}`},
		{"objects of a surrogate pair name", `{"\ud83d\ude00":0}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := fill(c.entry)
			var err error
			allocs := testing.AllocsPerRun(2, func() { err = checkDIDJSON(doc) })
			bytes := testalloc.Least(func() { err = checkDIDJSON(doc) })
			if err != nil {
				t.Fatalf("a document of %s: %v", c.name, err)
			}
			if allocs > 64 || bytes > 64<<10 {
				t.Fatalf("walking a %d-byte document made %.0f allocations of %d bytes", len(doc), allocs, bytes)
			}
			if _, err := ParseDIDDocument(doc); err != nil {
				t.Fatalf("a document of %s does not parse: %v", c.name, err)
			}
		})
	}
	// Names still read as encoding/json reads them.
	for _, dup := range []string{
		`{"id":"did:web:a.example","\u0069d":"did:web:b.example"}`,
		`{"id":"did:web:a.example","x":{"\ud83d\ude00":1,"😀":2}}`,
		`{"id":"did:web:a.example","x":{"\ud800":1,"\ufffd":2}}`,
		`{"id":"did:web:a.example","x":{"a\/b":1,"a/b":2}}`,
	} {
		if _, err := ParseDIDDocument([]byte(dup)); !errors.Is(err, ErrName("invalid_did_document")) {
			t.Errorf("a document naming a member twice, once escaped: got %v", err)
		}
	}
}

// TestDIDJSONNameReadsAsEncodingJSONReadsIt checks the decoding of an
// escaped member name against encoding/json's (docs/SPEC-DECISIONS.md
// AMP-31): a name it reads otherwise would let two spellings of one
// member through AMP-23's check.
func TestDIDJSONNameReadsAsEncodingJSONReadsIt(t *testing.T) {
	for _, s := range []string{
		`"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"a\u0041b"`, `"\u00e9\u00E9"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`,
		`"\ud83d\ud83d\ude00"`, `"\u0000"`, "\"\xff\\n\"", "\"\xe2\x82\\n\"", "\"é\\t😀\"",
		`"\uFFFD"`, `"\uDBFF\uDFFF"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		w := didJSON{buf: []byte("kept")}
		if got := w.unquote([]byte(s)); string(got) != want || string(w.buf[:4]) != "kept" {
			t.Errorf("%q reads as %q, encoding/json reads %q", s, got, want)
		}
	}
}
