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
	"github.com/ampbundle/ampbundle/compat"
)

// propsSchema is an object schema of n properties, each of type typ.
func propsSchema(n int, typ string) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":%q}`, i, typ)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// flippingMatrixBundle signs org.hostile with versions 1.0.0..N.0.0 of
// org.hostile.matrix whose schemas alternate between props properties of
// type string and the same properties of type integer: every pair of
// neighbouring versions is incompatible at every property.
func flippingMatrixBundle(t testing.TB, versions, props int) []byte {
	t.Helper()
	d := &bundle.Draft{BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{
			bundle.BytesSource("a.json", bundle.MediaTypeSchema, propsSchema(props, "string")),
			bundle.BytesSource("b.json", bundle.MediaTypeSchema, propsSchema(props, "integer")),
		}}
	for i := range versions {
		v, err := capability.ParseVersion(fmt.Sprintf("%d.0.0", i+1))
		if err != nil {
			t.Fatal(err)
		}
		key := "a.json"
		if i%2 == 1 {
			key = "b.json"
		}
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: "org.hostile.matrix", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestHostileMatrixFindingsCannotRenderAnUnboundedComparePage: a
// publisher's schemas choose how many findings a cell has. A 53 KB signed
// bundle (4 versions of one capability, two 26 KB schemas whose 1,000
// properties flip type) made /ui/compat a ~4 MiB page on every request by
// anyone, ~250 MiB at the 32 versions a matrix compares. The page shows
// at most MaxCellFindings a cell and MaxRenderBytes of findings, and
// counts the others.
func TestHostileMatrixFindingsCannotRenderAnUnboundedComparePage(t *testing.T) {
	const versions, props = 4, 1000
	file := flippingMatrixBundle(t, versions, props)
	h := newHandler(t, newStore(t, file))
	res, body := get(t, h, http.MethodGet, "/ui/compat?name=org.hostile.matrix")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	// A page shows at most two schemas of MaxRenderBytes each (CATALOG-6):
	// the compare page is held to the same bound.
	if limit := 2*MaxRenderBytes + 64<<10; len(body) > limit {
		perCell := len(body) / (versions * versions / 2)
		t.Errorf("a hostile %d-byte signed bundle makes /ui/compat render %d bytes (%d findings, over %d); "+
			"with %d versions the same schemas render ~%d MiB per request",
			len(file), len(body), strings.Count(body, "<li>"), limit,
			DefaultMaxMatrixVersions, perCell*(DefaultMaxMatrixVersions*DefaultMaxMatrixVersions/2)>>20)
	}
	if !strings.Contains(body, "more findings of this pair are not shown") {
		t.Errorf("the compare page does not say that findings of a pair are left out")
	}
}

// TestHostileMatrixFindingsAreBoundedInTheModel: a 21 KB bundle of 16
// versions of one capability (schemas of 300 properties flipping type)
// left ~77,000 findings in one matrix of the model, ~96 million at the
// manifest's bounds, all computed in the read any request triggers. The
// model keeps at most DefaultMaxReportFindings of a report and
// DefaultMaxMatrixFindingBytes of a matrix, and counts the others.
func TestHostileMatrixFindingsAreBoundedInTheModel(t *testing.T) {
	const versions, props, bound = 16, 300, 10_000
	file := flippingMatrixBundle(t, versions, props)
	h := newHandler(t, newStore(t, file))
	mx, ok := h.Model().Matrix("org.hostile.matrix")
	if !ok {
		t.Fatal("no matrix")
	}
	n := 0
	for _, c := range mx.Cells {
		n += len(c.Input.Findings) + len(c.Output.Findings) + len(c.Lost)
	}
	if n > bound {
		t.Errorf("a hostile %d-byte signed bundle leaves %d findings in one matrix of the model (over %d); "+
			"at %d versions and %d capabilities a bundle may carry, ~%d million",
			len(file), n, bound, DefaultMaxMatrixVersions, bundle.MaxCapabilities/DefaultMaxMatrixVersions,
			n*4*(bundle.MaxCapabilities/DefaultMaxMatrixVersions)/1_000_000)
	}
	counts, ok := h.Model().MatrixFindings("org.hostile.matrix")
	// Each side of a cell counts the findings its comparison kept: one per
	// flipped property, up to the checker's own cap (compat.MaxFindings,
	// COMPAT-15).
	if !ok || len(counts) != len(mx.Cells) {
		t.Fatalf("the model does not count the findings it drops: %d counts for %d cells", len(counts), len(mx.Cells))
	}
	if want := 2 * min(props, compat.MaxFindings); counts[1] != want {
		t.Errorf("the model counts %d findings for the second cell, want %d", counts[1], want)
	}
}

// TestHostileMatrixWorkIsDoneOnlyWhenItsPageAsksAndIsBounded: a
// publisher's versions make every check of a matrix cost up to
// compat.MaxSteps comparisons (seconds), and a matrix of n versions is
// 2n² checks: computed in the read, every capability's matrix was hours
// of CPU on the first request after each store change. The pages' read
// computes none; a page computes its own matrix within
// DefaultMaxMatrixSteps (cells past it are unknown, never full), and the
// model keeps it.
func TestHostileMatrixWorkIsDoneOnlyWhenItsPageAsksAndIsBounded(t *testing.T) {
	file := flippingMatrixBundle(t, 4, 50)
	h := newHandler(t, newStore(t, file))
	m := h.Model()
	if m.Matrices != nil || len(m.memo.kept) != 0 {
		t.Fatalf("the pages' read computed %d matrices (%d kept) before any page asked", len(m.Matrices), len(m.memo.kept))
	}
	if !m.HasMatrix("org.hostile.matrix") || len(m.memo.kept) != 0 {
		t.Fatalf("HasMatrix computes the matrix")
	}
	if res, _ := get(t, h, http.MethodGet, "/ui/compat?name=org.hostile.matrix"); res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if len(m.memo.kept) != 1 {
		t.Errorf("the compare page's matrix is not kept (%d kept)", len(m.memo.kept))
	}
	// The read's step budget reaches the checker: with a few steps, the
	// cells past them are unknown.
	p := newStore(t, file)
	src, err := opener(p)()
	if err != nil {
		t.Fatal(err)
	}
	defer src.(interface{ Close() error }).Close()
	opts := PageReadOptions(now)
	opts.MaxMatrixSteps = 4
	small, err := Read(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	mx, ok := small.Matrix("org.hostile.matrix")
	if !ok {
		t.Fatal("no matrix")
	}
	for i, c := range mx.Cells[2:] {
		if c.Level != compat.LevelUnknown {
			t.Errorf("cell %d past a budget of %d steps is %s, want unknown", i+2, opts.MaxMatrixSteps, c.Level)
		}
	}
}

// TestConcurrentComparePagesComputeAMatrixOnce: peers asking the same
// compare page at once wait for one computation of its matrix rather
// than each spending the budget again.
func TestConcurrentComparePagesComputeAMatrixOnce(t *testing.T) {
	m := newHandler(t, newStore(t, flippingMatrixBundle(t, 4, 20))).Model()
	const peers = 8
	cells := make(chan *compat.Cell, peers)
	for range peers {
		go func() {
			mx, ok := m.Matrix("org.hostile.matrix")
			if !ok || len(mx.Cells) == 0 {
				cells <- nil
				return
			}
			cells <- &mx.Cells[0]
		}()
	}
	first := <-cells
	for range peers - 1 {
		if c := <-cells; c == nil || c != first {
			t.Fatalf("%d concurrent asks of one matrix computed it more than once", peers)
		}
	}
	if first == nil {
		t.Fatal("no matrix")
	}
}
