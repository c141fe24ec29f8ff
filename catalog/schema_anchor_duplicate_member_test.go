package catalog

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestRefLinkCannotLandOnADecoyDuplicateMember: a schema object may name
// a member twice, and the validator reads the last one (GRAPH-1). Every
// member was an anchor, its id the hash of its pointer, so a decoy
// member before the real one (or inside a decoy container before the
// real container) carried the same id as the member the validator reads,
// and a browser following "#id" (a "$ref" link, a compatibility
// finding's link) lands on the first element with that id: the decoy. A
// reader following the "$ref" below read {"type":"integer"} while the
// agent enforces {"type":"string"}. Should be: an id is given only to a
// member the validator reads, once in the page.
func TestRefLinkCannotLandOnADecoyDuplicateMember(t *testing.T) {
	for _, c := range []struct{ name, doc string }{
		{"member twice", `{"type":"object","properties":{"p":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"},"x":{"type":"string"}}}`},
		{"container twice", `{"$defs":{"x":{"type":"integer"}},"type":"object","properties":{"p":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`},
		{"three times", `{"type":"object","properties":{"p":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"},"x":{"type":"boolean"},"x":{"type":"string"}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"s.json": c.doc}
			validatorAccepts(t, files, `{"p":"text"}`, "so it reads the last x")
			h := refLinkBundle(t, files)
			res, page := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=s.json")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			id := anchorID("s", "/$defs/x")
			if !strings.Contains(page, `<a href="#`+id+`">`) {
				t.Fatalf("the $ref is not linked to #%s:\n%s", id, page)
			}
			if n := strings.Count(page, `id="`+id+`"`); n != 1 {
				t.Fatalf("the page holds the id %s %d times: a browser follows the link to the first, a decoy the validator never reads", id, n)
			}
			at := strings.Index(page, `id="`+id+`"`)
			next := page[at:]
			if end := strings.Index(next, `</pre>`); end >= 0 {
				next = next[:end]
			}
			if first := strings.Index(next, "&#34;type&#34;: &#34;"); first < 0 || !strings.HasPrefix(next[first+len("&#34;type&#34;: &#34;"):], "string") {
				t.Errorf("the link lands on a member the validator does not read:\n%s", next)
			}
		})
	}
}

// TestShadowedMemberSpans: the members a later member of the same name
// overrides are told by their ordinals in the printer's order, nested
// members with them, merged; past maxShadowed spans the rest of the
// document is shadowed, so a flood of decoys costs a bounded list and
// still never gets an anchor.
func TestShadowedMemberSpans(t *testing.T) {
	var flood strings.Builder
	flood.WriteString(`{`)
	for i := range maxShadowed + 2 {
		fmt.Fprintf(&flood, `"a":0,"k%d":0,`, i)
	}
	flood.WriteString(`"a":1}`)
	for _, c := range []struct {
		name, doc string
		want      [][2]int
	}{
		{"none", `{"a":0,"b":{"a":1}}`, nil},
		{"member twice", `{"a":0,"b":{"c":1},"a":2}`, [][2]int{{0, 1}}},
		{"nested, merged", `{"b":{"c":1,"c":2},"b":3}`, [][2]int{{0, 3}}},
		{"adjacent merged", `{"a":0,"a":1,"a":2}`, [][2]int{{0, 2}}},
		{"in data too", `{"examples":[{"x":0,"x":1}]}`, [][2]int{{1, 2}}},
	} {
		if _, got := refsAndShadowed([]byte(c.doc)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	_, got := refsAndShadowed([]byte(flood.String()))
	if len(got) != maxShadowed+1 || got[maxShadowed][1] != math.MaxInt {
		t.Errorf("a flood of decoys keeps %d spans, the last %v", len(got), got[len(got)-1])
	}
}
