package ocitransport_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutReferrersReadNoManifestTooLargeForAStatement: the attack. A
// hostile layout (a folder or tar handed over for `sync oci-layout:…`,
// `import`, `pull --out`) holds, beside its bundles, one manifest of
// nearly 4 MiB (an annotation no one reads) that lists the bundles'
// manifests as its layers: in the layout's graph it is a predecessor of
// every bundle. Before review 76 each referrers listing of a layout
// (oras-go's registry.Referrers) fetched every predecessor whole and
// decoded it, to find out whether its subject is the bundle: 4 MiB read
// and decoded (16 MiB allocated) per bundle listed, so 10,000 bundles cost
// 40 GiB for a 20 MB layout, bounded by --timeout only. A statement
// manifest is at most MaxStatementManifestSize (16 KiB, refused above it
// when listed), so a predecessor larger than that is no statement and is
// not read: a listing costs what its statements weigh, not what the
// layout's other manifests weigh (docs/SPEC-DECISIONS.md OCI-18).
// Measured by the bytes allocated per listing (runtime.MemStats), with a
// bound of 1 MiB, a quarter of the big manifest.
func TestLayoutReferrersReadNoManifestTooLargeForAStatement(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "layout")
	bundle := pushSample(t, mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite), "v1")

	big := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config:      ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromString("{}"), Size: 2},
		Layers:      []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: bundle.Descriptor.Digest, Size: bundle.Descriptor.Size}},
		Annotations: map[string]string{"x": strings.Repeat("a", ocitransport.DefaultMaxManifestSize-4096)}}
	big.SchemaVersion = 2
	raw, err := json.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	plantManifest(t, dir, raw, "")

	src := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
	a, err := src.Resolve(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	const listings = 4
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range listings {
		if _, _, err := src.StatementsSkipping(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / listings; per > 1<<20 {
		t.Errorf("a referrers listing of a layout allocated %d bytes: it reads a %d-byte manifest that cannot be a statement", per, len(raw))
	}
}
