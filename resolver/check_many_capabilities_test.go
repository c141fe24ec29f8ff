package resolver

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// manyCapabilities is a bundle of n capabilities sharing two schemas.
func manyCapabilities(t *testing.T, n int) []byte {
	t.Helper()
	d := &bundle.Draft{BundleID: fmt.Sprintf("org.example.many%d", n), Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{
			bundle.BytesSource("schemas/in.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
			bundle.BytesSource("schemas/out.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		}}
	v, _ := capability.ParseVersion("1.0.0")
	for i := range n {
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: fmt.Sprintf("org.example.many%d.c%05d", n, i), Version: v,
			InputSchema:  capability.SchemaRef{ArtifactKey: "schemas/in.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "schemas/out.schema.json"}})
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{sampleKey(t, "example-publisher")}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkAllocated is the bytes one Check of s allocates (the least of
// testalloc.Runs checks).
func checkAllocated(t *testing.T, s *Store) uint64 {
	t.Helper()
	var ps []Problem
	var err error
	a := testalloc.Least(func() { ps, err = s.Check() })
	if err != nil || len(ps) != 0 {
		t.Fatalf("check: %v %v", ps, err)
	}
	return a
}

// TestCheckOfABundleOfManyCapabilitiesCostsLinearly: a trusted
// publisher's bundle of many capabilities (up to 10,000 a bundle) made
// every store check, /readyz's after each import included, encode every
// descriptor of the bundle once per descriptor entry: 10,000
// capabilities allocated 99 GB over nearly 7 minutes. Four times the
// capabilities now cost about four times the bytes, not sixteen (CLI-62).
func TestCheckOfABundleOfManyCapabilitiesCostsLinearly(t *testing.T) {
	cost := map[int]uint64{}
	for _, n := range []int{200, 800} {
		s := newStore(t)
		mustImport(t, s, manyCapabilities(t, n))
		cost[n] = checkAllocated(t, s)
	}
	if ratio := float64(cost[800]) / float64(cost[200]); ratio > 7 {
		t.Fatalf("a check of 800 capabilities allocated %d bytes, of 200 %d: %.1f times for four times the capabilities", cost[800], cost[200], ratio)
	}
}
