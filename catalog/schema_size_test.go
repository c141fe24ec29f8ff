package catalog

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// deepBundle signs a bundle org.hostile whose capability takes and gives
// the schema deep.json.
func deepBundle(t testing.TB, schema []byte) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("deep.json", bundle.MediaTypeSchema, schema)},
		Capabilities: []capability.Descriptor{{Name: "org.hostile.deep", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "deep.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "deep.json"}}},
	}, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// longKeySchema is a valid schema of 27 KB: under an unknown keyword, 20
// levels of 500-byte keys (within the import's compile limits, nesting
// at most 128), then 2,000 small members. An anchor id holding its full
// pointer would be ~20 KiB each.
func longKeySchema() []byte {
	key := strings.Repeat("k", 500)
	var b strings.Builder
	b.WriteString(`{"x":`)
	for range 20 {
		b.WriteString(`{"` + key + `":`)
	}
	b.WriteString("{")
	for i := range 2000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%d":0`, i)
	}
	b.WriteString("}" + strings.Repeat("}", 20) + "}")
	return []byte(b.String())
}

// TestDeepSchemaPageIsLinearInSchemaSize: a publisher's schema of
// 27 KB (well under the 256 KiB kept, and accepted by import's compile
// check) must not render a page thousands of times its size. When every
// object member became <span id="s-HEX(full pointer)">, long keys on a
// path made the page O(bytes²): GiBs per request at 256 KiB, recomputed
// on every request, 16 at once (version pages render the schema twice).
func TestDeepSchemaPageIsLinearInSchemaSize(t *testing.T) {
	schema := longKeySchema()
	h := newHandler(t, newStore(t, deepBundle(t, schema)))
	for _, p := range []string{"/ui/schema?b=org.hostile&k=deep.json", "/ui/version?name=org.hostile.deep&v=1.0.0"} {
		res, body := get(t, h, http.MethodGet, p)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", p, res.StatusCode)
		}
		if ratio := len(body) / len(schema); ratio > 64 {
			t.Errorf("%s: a %d-byte schema renders a %d-byte page (%dx); extrapolated to a 256 KiB schema: ~%d MiB per request",
				p, len(schema), len(body), ratio, int64(len(body))*(256<<10)/int64(len(schema))*(256<<10)/int64(len(schema))>>20)
		}
	}
}

// TestDeepObjectSchemaAnchorsAreShort: nested objects make every member an
// anchor; an id holding its whole pointer would be O(depth²) again.
func TestDeepObjectSchemaAnchorsAreShort(t *testing.T) {
	const depth = 1500
	schema := []byte(strings.Repeat(`{"a":`, depth) + "{}" + strings.Repeat("}", depth))
	m := &Model{schemas: map[SchemaLoc]Schema{}}
	s := Schema{Loc: SchemaLoc{BundleID: "b", Key: "k.json"}, Text: schema}
	m.schemas[s.Loc] = s
	n := 0
	for _, tok := range m.pretty(s, "s") {
		n += len(tok.Text) + len(tok.ID) + len(tok.Href)
	}
	if n/len(schema) > 64 {
		t.Errorf("a %d-byte schema pretty-prints to %d bytes (%dx)", len(schema), n, n/len(schema))
	}
}

// TestHugeRenderingIsCut: a schema whose rendering passes MaxRenderBytes
// (HTML escaping multiplies some bytes by five) is cut there with a note,
// so no page holds more than about MaxRenderBytes per schema.
func TestHugeRenderingIsCut(t *testing.T) {
	schema := []byte(`{"x":"` + strings.Repeat("<", 220<<10) + `"}`)
	h := newHandler(t, newStore(t, deepBundle(t, schema)))
	res, body := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=deep.json")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if !strings.Contains(body, "The rendering stops here") {
		t.Errorf("a %d-byte page carries no note that the rendering is cut", len(body))
	}
	if len(body) > MaxRenderBytes+16<<10 {
		t.Errorf("the page is %d bytes, over MaxRenderBytes (%d)", len(body), MaxRenderBytes)
	}
}

// TestDeepNestingIndentIsCapped: below maxIndentDepth lines are not
// indented further, so deep nesting costs no more per line.
func TestDeepNestingIndentIsCapped(t *testing.T) {
	const depth = 120
	schema := []byte(`{"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
	m := &Model{schemas: map[SchemaLoc]Schema{}}
	s := Schema{Loc: SchemaLoc{BundleID: "b", Key: "k.json"}, Text: schema}
	for _, tok := range m.pretty(s, "s") {
		for line := range strings.SplitSeq(tok.Text, "\n") {
			if n := len(line) - len(strings.TrimLeft(line, " ")); n > 2*maxIndentDepth {
				t.Fatalf("a line is indented by %d spaces", n)
			}
		}
	}
}

// manyMembersSchema is a valid schema of n members with
// three-character names and number values, under "default" (data: no
// object to compile, but every member is still an anchor of the page).
func manyMembersSchema(n int) []byte {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b strings.Builder
	b.WriteString(`{"type":"object","default":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + string(alpha[i%36]) + string(alpha[(i/36)%36]) + string(alpha[(i/1296)%36]) + `":0`)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// TestHostileSchemaOfSmallMembersCannotRenderPastMaxRenderBytes: every
// member of a schema is an anchor, <span id="…"></span>, and a $ref a
// link, <a href="…">…</a>. When the estimate counted only the id, a 240 KB
// schema of small members rendered half as much again past
// MaxRenderBytes (CATALOG-6), twice on a version page. The markup is
// counted.
func TestHostileSchemaOfSmallMembersCannotRenderPastMaxRenderBytes(t *testing.T) {
	schema := manyMembersSchema(30000)
	if len(schema) > DefaultMaxSchemaBytes {
		t.Fatalf("the schema (%d bytes) would be truncated", len(schema))
	}
	h := newHandler(t, newStore(t, deepBundle(t, schema)))
	res, body := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=deep.json")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	start := strings.Index(body, `<pre class="schema"`)
	end := strings.Index(body, "</pre>")
	if start < 0 || end < start {
		t.Fatalf("no rendered schema in the page")
	}
	if pre := end - start; pre > MaxRenderBytes+16<<10 {
		t.Errorf("a hostile %d-byte schema of small members renders %d bytes in its <pre> (cut note shown: %v), over MaxRenderBytes (%d) by %d%%: "+
			"the markup around its anchors is not counted",
			len(schema), pre, strings.Contains(body, "The rendering stops here"), MaxRenderBytes, (pre-MaxRenderBytes)*100/MaxRenderBytes)
	}
}
