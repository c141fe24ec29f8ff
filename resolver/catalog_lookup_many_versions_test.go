package resolver

import (
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
)

// versionsCatalog is a catalog of n versions of one name, ascending as
// Store.Catalog builds it, with two versions of equal precedence that
// differ in build metadata only.
func versionsCatalog(tb testing.TB, n int) *Catalog {
	tb.Helper()
	var es []Entry
	for i := range n {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			tb.Fatal(err)
		}
		es = append(es, Entry{Descriptor: capability.Descriptor{Name: "org.example.v", Version: v}, BundleID: fmt.Sprint(i)})
		if i == n/2 {
			b, _ := capability.ParseVersion(fmt.Sprintf("1.%d.0+b", i))
			es = append(es, Entry{Descriptor: capability.Descriptor{Name: "org.example.v", Version: b}, BundleID: "b"})
		}
	}
	return &Catalog{Names: []string{"org.example.v"}, ByName: map[string][]Entry{"org.example.v": es}}
}

// TestCatalogLookupFindsEveryVersionInOrderOrNot: Lookup searches a
// name's entries by halves (SCALE-2); every version is found, a version of
// equal precedence by its build metadata, a missing one is not, and a
// catalog built out of order by hand is still answered.
func TestCatalogLookupFindsEveryVersionInOrderOrNot(t *testing.T) {
	c := versionsCatalog(t, 101)
	reversed := &Catalog{ByName: map[string][]Entry{}}
	for _, e := range c.ByName["org.example.v"] {
		reversed.ByName["org.example.v"] = append([]Entry{e}, reversed.ByName["org.example.v"]...)
	}
	for _, cat := range []*Catalog{c, reversed} {
		for _, e := range c.ByName["org.example.v"] {
			got, ok := cat.Lookup(capability.ID{Name: "org.example.v", Version: e.Descriptor.Version})
			if !ok || got.BundleID != e.BundleID {
				t.Fatalf("Lookup(%s) = %v %v, want the entry of bundle %s", e.Descriptor.Version, got.BundleID, ok, e.BundleID)
			}
		}
		for _, miss := range []string{"0.9.0", "1.50.0+c", "2.0.0", "1.3.0-rc.1"} {
			v, _ := capability.ParseVersion(miss)
			if _, ok := cat.Lookup(capability.ID{Name: "org.example.v", Version: v}); ok {
				t.Fatalf("Lookup(%s) found an entry", miss)
			}
		}
	}
}

// BenchmarkCatalogLookupOfManyVersions looks up every version of a name
// of n versions: n·log n, where the walk was n².
func BenchmarkCatalogLookupOfManyVersions(b *testing.B) {
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := versionsCatalog(b, n)
			es := c.ByName["org.example.v"]
			for b.Loop() {
				for _, e := range es {
					if _, ok := c.Lookup(capability.ID{Name: "org.example.v", Version: e.Descriptor.Version}); !ok {
						b.Fatal("missing")
					}
				}
			}
		})
	}
}
