package ocitransport_test

import (
	"crypto/sha256"
	"os"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// FuzzDecodeManifest: a manifest from a registry never panics the decoder,
// and what it accepts has layers that add up to the file it announces.
func FuzzDecodeManifest(f *testing.F) {
	file, err := os.ReadFile(sampleBundle)
	if err != nil {
		f.Fatal(err)
	}
	sum := sha256.Sum256(file)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.FromBytes(file), Size: int64(len(file))}
	f.Add(ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(file)), sum[:], "t.ampb", "org.example.translate", 1))
	f.Add([]byte(`{"schemaVersion":2}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ocitransport.DecodeManifest(data, ocispec.Descriptor{}, 1<<30)
		if err != nil {
			return
		}
		if a.Kind == ocitransport.KindBundle {
			var total int64
			for _, l := range a.Manifest.Layers {
				total += l.Size
			}
			if total != a.FileSize || len(a.FileSHA256) != 32 {
				t.Fatalf("accepted layers of %d bytes for a file of %d", total, a.FileSize)
			}
		} else if a.Manifest.Subject == nil || len(a.Manifest.Layers) != 1 {
			t.Fatal("accepted a statement without subject or with other than one layer")
		}
	})
}

// FuzzParseLocation: a location never panics the parser, and what it
// accepts prints back to itself.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"oci://127.0.0.1:5000/amp/x:v1", "oci://r/a@sha256:" + hex64, "oci-layout:d:t", "oci-layout:x.tar@sha256:" + hex64, "oci-layout::", "oci://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ocitransport.ParseLocation(s)
		if err != nil {
			return
		}
		again, err := ocitransport.ParseLocation(l.String())
		if err != nil || again != l {
			t.Fatalf("%q parses to %+v, printed %q, parsed again %+v (%v)", s, l, l.String(), again, err)
		}
	})
}
