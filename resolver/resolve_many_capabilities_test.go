package resolver

import (
	"testing"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// resolveEveryAllocated is the bytes that resolving the input and output
// schema of every capability of s's catalog allocates (the least of
// testalloc.Runs rounds: Resolve keeps no cache).
func resolveEveryAllocated(t *testing.T, s *Store) uint64 {
	t.Helper()
	c, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	return testalloc.Least(func() {
		for _, name := range c.Names {
			for _, e := range c.ByName[name] {
				for _, ref := range []capability.SchemaRef{e.Descriptor.InputSchema, e.Descriptor.OutputSchema} {
					if _, err := s.Resolve(ref); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	})
}

// TestResolvingEverySchemaOfManyCapabilitiesCostsLinearly: every
// Resolve (and every Schema re-check, every DID resolution) copied the
// whole signed manifest of the bundle out of the store to read its
// expiry, so that resolving each capability's schemas, as the MCP
// bridge's tool list does, cost the capabilities times the manifest:
// 2,000 capabilities allocated 1.6 GB, 10,000 would allocate some 80 GB.
// Four times the capabilities now cost about four times the bytes, not
// sixteen (SCALE-1).
func TestResolvingEverySchemaOfManyCapabilitiesCostsLinearly(t *testing.T) {
	cost := map[int]uint64{}
	for _, n := range []int{200, 800} {
		s := newStore(t)
		mustImport(t, s, manyCapabilities(t, n))
		cost[n] = resolveEveryAllocated(t, s)
	}
	if ratio := float64(cost[800]) / float64(cost[200]); ratio > 7 {
		t.Fatalf("resolving the schemas of 800 capabilities allocated %d bytes, of 200 %d: %.1f times for four times the capabilities", cost[800], cost[200], ratio)
	}
}
