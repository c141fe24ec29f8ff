package amp

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// members returns an object of the members named name(0) to name(n-1),
// each of value value, and then those of extra.
func members(n int, name func(int) string, value string, extra ...string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%s", name(i), value)
	}
	for _, e := range extra {
		b.WriteString("," + e)
	}
	b.WriteString("}")
	return b.String()
}

// TestDIDDocumentOfManyObjectsOfOver32MembersAllocatesNoSetEach covers
// memory the AMP-23 walk of a DID document (checkDIDJSON) spent on
// objects of more than 32 members (docs/SPEC-DECISIONS.md AMP-33).
//
// Attack: the publisher of a DID document (each DID artifact of a bundle,
// walked at admission, at import, at `check` and at each resolution the
// store's cache misses; a file given to ampagent) fills a member nothing
// reads (alsoKnownAs, @context, an unknown member) with objects of 33
// members. To find a member named twice, the walk made a set of its own
// for each object past 32 members, sized for 64, and copied each name
// into it: a 256 KiB document of such objects, which parses, cost 5,250
// allocations and 4,644,672 bytes (17.7 times its size; 32 members cost
// 2,032 bytes); with two-letter names, a string more per member.
//
// Should: the document parses as before, walked in at most 64
// allocations within 64 KiB: the names of an object past 32 members are
// looked up by hash in one map the whole walk shares, each object's
// entries leaving it when the object closes. A member named twice is
// still refused wherever it stands, and an inner object's names never
// clash with those of the object around it.
func TestDIDDocumentOfManyObjectsOfOver32MembersAllocatesNoSetEach(t *testing.T) {
	letter := func(i int) string { return string(rune('A' + i%26 + i/26*32)) }
	two := func(i int) string { return fmt.Sprintf("%02x", i) }
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
		{"objects of 33 one-letter names", members(33, letter, "0")},
		{"objects of 33 two-letter names", members(33, two, "0")},
		{"objects of 40 in objects of 40", members(40, two, members(40, two, "0"))},
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
		})
	}
	const id = `{"id":"did:web:a.example","x":`
	inner := members(40, two, "0")
	for _, c := range []struct {
		name string
		obj  string
		dup  bool
	}{
		{"a name of the first 32 again at 33", members(33, two, "0", `"00":1`), true},
		{"a name of the first 32 again at 100", members(100, two, "0", `"1f":1`), true},
		{"the 40th name again at 90", members(90, two, "0", `"27":1`), true},
		{"an escaped name again past 32", members(40, two, "0", `"\u0030\u0030":1`), true},
		{"the outer name again after a large inner object", members(40, two, inner, `"05":1`), true},
		{"a large inner object of the outer's names", members(40, two, inner), false},
		{"the inner names again in a sibling", `[` + inner + `,` + inner + `]`, false},
	} {
		_, err := ParseDIDDocument([]byte(id + c.obj + `}`))
		refused := errors.Is(err, ErrName("invalid_did_document")) && strings.Contains(err.Error(), "names a member twice")
		if refused != c.dup {
			t.Errorf("%s: got %v, refused for a name given twice: %v", c.name, err, c.dup)
		}
	}
}
