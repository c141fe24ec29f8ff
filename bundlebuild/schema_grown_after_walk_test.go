package bundlebuild

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSchemaGrownAfterWalkOutgrowsItsCharge: a schema's first read is
// admitted to the in-flight budget for the size the walk saw, and the
// bound of its tree is charged only once it is read. Anyone who can write
// in the source folder rewrote a small schema, in place, to 4 MiB after
// the walk: the read took the 4 MiB (and the parse its tree) beyond what
// was charged, while other schemas were admitted into that room. Expected:
// a schema is read no further than the size the walk saw (what its first
// charge covers); one that has grown since is refused, naming it, with at
// most that many bytes and one more read.
func TestSchemaGrownAfterWalkOutgrowsItsCharge(t *testing.T) {
	const victim = "schemas/common/text.json"
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	grown := `{"description":"` + strings.Repeat("a", 4<<20-32) + `"}`
	var before, after runtime.MemStats
	rewritten := false
	progress := func(phase string, done, total int64) {
		if rewritten || phase != "indexing schemas" {
			return
		}
		rewritten = true // after the first schema, before the victim (sorted last) is read
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(victim)), []byte(grown), 0o644); err != nil {
			t.Error(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
	}
	k := testKey(1)
	_, err := LoadSource(dir, SourceOptions{CreatedAt: sampleCreated, Signer: k.Public().(ed25519.PublicKey), Workers: 1, Progress: progress})
	runtime.ReadMemStats(&after)
	if !rewritten {
		t.Fatal("precondition: no schema was indexed")
	}
	if err == nil || !errors.Is(err, bundle.ErrSource) || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "grown") {
		t.Fatalf("a schema rewritten to %d bytes after the walk: got %v, want %s naming %s as grown", len(grown), err, bundle.ErrSource, victim)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<20 {
		t.Fatalf("the schema grown to %d bytes after the walk made the build allocate %d MiB", len(grown), grew>>20)
	}
}
