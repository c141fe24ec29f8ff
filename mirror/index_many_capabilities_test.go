package mirror

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// manyCapabilitiesFile is a bundle of n capabilities sharing one schema.
func manyCapabilitiesFile(t *testing.T, n int) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	d := &bundle.Draft{BundleID: "org.example.many", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))}}
	for i := range n {
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: fmt.Sprintf("org.example.many.c%05d", i), Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{testKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestIndexOfABundleOfManyCapabilitiesCostsLinearly: building the
// mirror's index resolves both schemas of every capability it lists,
// and each resolution copied the bundle's whole signed manifest out of
// the store: a bundle of 2,000 capabilities allocated 3.2 GB at every
// refresh, of 10,000 (the most one bundle may hold) some 80 GB. Four
// times the capabilities now cost about four times the bytes, not
// sixteen (SCALE-1).
func TestIndexOfABundleOfManyCapabilitiesCostsLinearly(t *testing.T) {
	cost := map[int]uint64{}
	for _, n := range []int{200, 800} {
		p := newStore(t, manyCapabilitiesFile(t, n))
		var m *Server
		var err error
		cost[n] = testalloc.Least(func() { // each mirror spools into a folder of its own
			m, err = New(Options{Open: openerOf(p), SpoolDir: filepath.Join(t.TempDir(), "spool")})
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(m.current().bundles); got != 1 {
			t.Fatalf("%d bundles served", got)
		}
	}
	if ratio := float64(cost[800]) / float64(cost[200]); ratio > 7 {
		t.Fatalf("the index of 800 capabilities allocated %d bytes, of 200 %d: %.1f times for four times the capabilities", cost[800], cost[200], ratio)
	}
}
