package catalog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/resolver"
)

// recordSchema is a valid 2020-12 schema of about size bytes, distinct by
// tag: an object of many small properties, each with a "$ref".
func recordSchema(tag string, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"$id":"https://example.org/%s.json","type":"object","properties":{`, tag)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d":{"type":"object","description":"field %d of %s","properties":{"a":{"type":"string","maxLength":64},"b":{"type":"integer","minimum":0},"c":{"$ref":"#/$defs/x"}},"required":["a","b"]}`, i, i, tag)
	}
	b.WriteString(`},"$defs":{"x":{"type":"string"}}}`)
	return []byte(b.String())
}

// schemasBundle signs a bundle id (one the hostile key is trusted for)
// with n capabilities, each taking and giving its own schema of about
// size bytes.
func schemasBundle(t testing.TB, id string, n, size int) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	for i := range n {
		key := fmt.Sprintf("s%d.json", i)
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(key, bundle.MediaTypeSchema, recordSchema(fmt.Sprintf("%s-%d", id, i), size)))
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: fmt.Sprintf("%s.cap%d", id, i), Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// readStore reads the page model of the store at p, opened read-only,
// with opts adjusted by adjust.
func readStore(t testing.TB, p string, adjust func(*ReadOptions)) *Model {
	t.Helper()
	s, err := resolver.Open(p, resolver.Options{ReadOnly: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opts := PageReadOptions(now)
	if adjust != nil {
		adjust(&opts)
	}
	m, err := Read(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestUnchangedSchemasAreParsedAgainAtEveryRead: every read of the
// catalog's model (at each store change, every hour, at each expiry)
// parsed every schema of every bundle again, at about 100 times its
// size: 8 schemas of 256 KiB made each read allocate ~200 MB. Schemas
// are content-addressed, so a read now takes what the model it replaces
// derived of the same bytes: the second read of an unchanged store
// allocates a small fraction of the first, and its model is the same.
func TestUnchangedSchemasAreParsedAgainAtEveryRead(t *testing.T) {
	p := newStore(t, schemasBundle(t, "org.hostile", 4, 200<<10))
	first := readStore(t, p, nil)
	s, err := resolver.Open(p, resolver.Options{ReadOnly: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read := func(prev *Model) func() {
		return func() {
			opts := PageReadOptions(now)
			opts.Previous = prev
			if _, err := Read(s, opts); err != nil {
				t.Fatal(err)
			}
		}
	}
	cold := testalloc.Least(read(nil))
	warm := testalloc.Least(read(first))
	t.Logf("a read allocates %d bytes alone, %d after a read of the same store", cold, warm)
	if !testalloc.Race && warm > cold/8 {
		t.Errorf("a read of an unchanged store allocates %d bytes, over 1/8 of the %d of the first read", warm, cold)
	}
	second := readStore(t, p, func(o *ReadOptions) { o.Previous = first })
	if len(second.schemas) != len(first.schemas) || len(first.schemas) < 4 {
		t.Fatalf("the models keep %d and %d schemas", len(first.schemas), len(second.schemas))
	}
	for loc, a := range first.schemas {
		if b := second.schemas[loc]; !reflect.DeepEqual(a, b) {
			t.Errorf("%v: the schema read again differs from the one read alone", loc)
		}
	}
}

// TestPagesOfAReusedModelAreByteIdentical: a handler whose model was read
// again after MaxAge (reusing the one it replaces) serves every schema
// page byte for byte as a handler that read the store alone.
func TestPagesOfAReusedModelAreByteIdentical(t *testing.T) {
	p := newStore(t, schemasBundle(t, "org.many", 2, 300<<10), hostileBundle(t))
	var mu sync.Mutex
	clock := testNow
	tick := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	h, err := NewHandler(Options{Open: opener(p), Now: tick})
	if err != nil {
		t.Fatal(err)
	}
	before := h.Model()
	mu.Lock()
	clock = clock.Add(2 * DefaultMaxAge)
	mu.Unlock()
	if err := h.refresh(true); err != nil || h.Model() == before {
		t.Fatalf("the model was not read again (%v)", err)
	}
	alone, err := NewHandler(Options{Open: opener(p), Now: tick}) // read alone, at the same time
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"/ui/schema?b=org.many&k=s0.json", "/ui/schema?b=org.many&k=s1.json",
		"/ui/schema?b=org.hostile&k=in.json", "/ui/version?name=org.many.cap0&v=1.0.0"}
	loc := SchemaLoc{BundleID: "org.many", Key: "s0.json"}
	if a, b := before.schemas[loc].Text, h.Model().schemas[loc].Text; len(a) == 0 || len(b) == 0 || &a[0] != &b[0] {
		t.Fatalf("the model read again did not take the text the model it replaced kept")
	}
	for _, u := range pages {
		_, got := get(t, h, http.MethodGet, u)
		_, want := get(t, alone, http.MethodGet, u)
		if got != want || !strings.Contains(got, "<pre") {
			t.Errorf("%s: the page of the model read again differs from the page read alone (%d and %d bytes)", u, len(got), len(want))
		}
	}
	for loc, s := range h.Model().schemas {
		got, err := h.Model().prettyFor(context.Background(), s, "s")
		want, err2 := alone.Model().prettyFor(context.Background(), alone.Model().schemas[loc], "s")
		if err != nil || err2 != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: the rendering of the model read again differs", loc)
		}
	}
}

// TestRefWalkAllocatesMapsPerObject: the first read of a schema walks
// its tokens for its $ref entries and shadowed members
// (refsAndShadowed). The walk made two maps in nearly every object of
// the document, to find a member named twice: 8.9 MB, 35 times the
// size, for a 250 KiB schema of small objects. It now keeps the members
// of the open objects in one slice (a map only for an object of more
// than indexedMembers): at most 28 times the size, here 6.0 MB.
func TestRefWalkAllocatesMapsPerObject(t *testing.T) {
	doc := recordSchema("walk", 250<<10)
	got := testalloc.Least(func() { refsAndShadowed(doc) })
	if !testalloc.Race && got > 28*uint64(len(doc)) {
		t.Errorf("walking a schema of %d bytes allocated %d bytes, over 28 times its size", len(doc), got)
	}
}
