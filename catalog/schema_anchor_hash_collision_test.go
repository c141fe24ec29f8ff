package catalog

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// minAnchorHexDigits is the least hash an anchor id must carry: 128
// bits, so that two pointers of one id take about 2^64 hashes to find.
const minAnchorHexDigits = 32

// TestAnchorIdCannotBeForgedByAPointerWhoseHashPrefixCollides: the
// attack: an anchor id of a rendered schema was 16 hex digits (64 bits)
// of the SHA-256 of the member's JSON pointer, with nothing of the
// document or the bundle in it. Two pointers of one id are a birthday
// collision of 64 bits: about 2^32 hashes of "/$defs/<name>" (a Go loop
// computes some 5.8 million a second a core: a quarter of an hour on one
// core, once, then good for every schema of every store). A publisher
// puts the decoy member first and the member the validator reads second,
// under the two colliding names: the page carries the id twice, and a
// browser following the "$ref" link or a compatibility finding's link
// goes to the first element of an id, the decoy (the threat of
// CATALOG-33 with two names for one id). Expected: an id carries 128
// bits of the hash, the ids of the members of a page are distinct, and
// the printer's ids are anchorID's, which the links use.
func TestAnchorIdCannotBeForgedByAPointerWhoseHashPrefixCollides(t *testing.T) {
	for _, p := range []string{"", "/$defs/x", "/properties/a~1b", "/$defs/" + strings.Repeat("k", 300)} {
		id := anchorID("s", p)
		if hexPart := strings.TrimPrefix(id, "s-"); len(hexPart) < minAnchorHexDigits {
			t.Errorf("the anchor id of %q is %q: %d hex digits (%d bits) of the hash, want at least %d",
				p, id, len(hexPart), 4*len(hexPart), minAnchorHexDigits)
		}
	}

	doc := `{"$defs":{"x":{"type":"string"},"y":{"type":"integer"}},"type":"object","properties":{"p":{"$ref":"#/$defs/y"}}}`
	h := refLinkBundle(t, map[string]string{"s.json": doc})
	res, page := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=s.json")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	want := anchorID("s", "/$defs/y")
	if !strings.Contains(page, `<a href="#`+want+`">`) {
		t.Fatalf("the $ref is not linked to #%s", want)
	}
	ids := regexp.MustCompile(`<span id="(s-[0-9a-f]+)"></span>`).FindAllStringSubmatch(page, -1)
	if len(ids) < 6 {
		t.Fatalf("the page holds %d anchors, want one a member (6)", len(ids))
	}
	seen := map[string]bool{}
	for _, m := range ids {
		if len(strings.TrimPrefix(m[1], "s-")) < minAnchorHexDigits {
			t.Errorf("the printer's anchor %s carries %d bits of the hash", m[1], 4*len(strings.TrimPrefix(m[1], "s-")))
		}
		if seen[m[1]] {
			t.Errorf("the page holds the id %s twice", m[1])
		}
		seen[m[1]] = true
	}
	if n := strings.Count(page, `id="`+want+`"`); n != 1 {
		t.Errorf("the page holds the $ref's target id %d times, want once", n)
	}
}
