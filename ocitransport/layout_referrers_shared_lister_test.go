package ocitransport_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutReferrersReadEachListerOnce: the attack (left open
// by OCI-18). A hostile layout handed to `sync` holds B bundles and M
// manifests of just under MaxStatementManifestSize (16 KiB) that each
// list every bundle's manifest as a layer: each is a predecessor of every
// bundle, small enough to be a statement, so before review 81 each
// bundle's referrers listing read, hashed and decoded all M of them again:
// B × M × 16 KiB for a layout of about M × 16 KiB (here 60 × 40 × 16 KiB,
// 118 MiB allocated for 0.6 MiB of such manifests; at the layout's bounds,
// about a hundred times the layout per sync). A manifest of the layout is
// now read at most once per endpoint to learn its subject (its digest
// names its bytes), so a sync reads each once (docs/SPEC-DECISIONS.md
// OCI-18, amended in review 81). Measured by the bytes allocated over the
// B listings (runtime.MemStats), with a bound of 8 MiB.
func TestLayoutReferrersReadEachListerOnce(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "layout")
	genuine := pushSample(t, mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite), "v1")
	sum := sha256.Sum256(mustRead(t, sampleBundle))

	const bundles, listers = 60, 40
	var bundleDescs []ocispec.Descriptor
	for i := range bundles {
		raw := ocitransport.BundleManifest(genuine.Manifest.Layers, genuine.FileSize, sum[:], "translate.ampb", genuine.BundleID, genuine.Version+uint64(i)+1)
		plantManifest(t, dir, raw, fmt.Sprintf("b%d", i))
		bundleDescs = append(bundleDescs, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))})
	}
	var listerSize int
	for i := range listers {
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
			Config: ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromString("{}"), Size: 2},
			Layers: bundleDescs}
		m.SchemaVersion = 2
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m.Annotations = map[string]string{"x": fmt.Sprint(i) + strings.Repeat("a", ocitransport.MaxStatementManifestSize-len(raw)-64)}
		if raw, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if len(raw) > ocitransport.MaxStatementManifestSize {
			t.Fatalf("a lister of %d bytes", len(raw))
		}
		listerSize = len(raw)
		plantManifest(t, dir, raw, "")
	}

	src := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
	var arts []*ocitransport.Artifact
	for i := range bundles {
		a, err := src.Resolve(ctx, fmt.Sprintf("b%d", i))
		if err != nil {
			t.Fatal(err)
		}
		arts = append(arts, a)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, a := range arts {
		if _, _, err := src.StatementsSkipping(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("%d referrers listings of a layout allocated %d bytes: %d manifests of %d bytes listing every bundle were read again in each", bundles, got, listers, listerSize)
	}
}
