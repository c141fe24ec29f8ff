package ocitransport

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestManifestWhoseLayerSizesWrapToTheFileSizeIsRefused: checkBundleManifest
// summed the layers' sizes in an int64 that could wrap: with the blob
// bound raised to math.MaxInt64 (an embedder may; the command allows
// 2^62), five layers of 2^62 bytes each "added up" to a file of 2^62
// (2^64 wraps to 0), and the manifest was taken for one whose parts make
// the file. A layer larger than what the file has left is now refused at
// once, oci_manifest_invalid, and no sum can wrap.
func TestManifestWhoseLayerSizesWrapToTheFileSizeIsRefused(t *testing.T) {
	const part = int64(1) << 62
	for _, tc := range []struct {
		name    string
		layers  int
		size    int64
		refused bool
	}{
		{"five layers of 2^62 claiming a file of 2^62", 5, part, true},
		{"one layer of 2^62 making a file of 2^62", 1, part, false},
		{"two layers of 2^62 claiming a file of 2^62", 2, part, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeBundle,
				Config:      emptyConfig,
				Annotations: map[string]string{AnnotationFileSize: fmt.Sprint(tc.size), AnnotationFileSHA256: strings.Repeat("ab", 32)}}
			m.SchemaVersion = 2
			media := MediaTypeBundlePart
			if tc.layers == 1 {
				media = MediaTypeBundleFile
			}
			for i := range tc.layers {
				d := digest.FromString(fmt.Sprint(i))
				if tc.layers == 1 {
					d = digest.NewDigestFromEncoded(digest.SHA256, strings.Repeat("ab", 32))
				}
				m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: media, Digest: d, Size: part})
			}
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeManifest(data, ocispec.Descriptor{}, math.MaxInt64)
			if got := err != nil; got != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
			}
			if tc.refused && !strings.Contains(err.Error(), "add up") {
				t.Fatalf("refused for %v, want the layers' sizes", err)
			}
		})
	}
}
