package ocitransport_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestCopyPartsThatAreNotTheFileAreRefused: the attack. A hostile
// source (a registry, or a layout handed over) serves a bundle manifest
// cut into parts whose layers are each genuine blobs, matching their
// digests, but listed in another order: their sizes still add up to the
// file size annotation, so the manifest decodes, yet concatenated they are
// not the file its vnd.ampbundle.file.sha256 names. Before review 76 Copy
// (`pull --out oci-layout:`, `push oci-layout:…`, a layout tar rewritten)
// checked each layer's digest only, landed the manifest and tagged it: the
// destination held, under the operator's tag, a bundle that no pull can
// ever import, from a copy said to be "verified as a pull is". It fails as
// a pull does, oci_digest_mismatch, before the manifest lands, whether the
// parts stream from the source or the destination holds them already
// (read back, verified). docs/SPEC-DECISIONS.md OCI-17.
func TestCopyPartsThatAreNotTheFileAreRefused(t *testing.T) {
	ctx := context.Background()
	srcDir := filepath.Join(t.TempDir(), "src")
	src := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{MaxLayerSize: 3000}, ocitransport.ReadWrite)
	genuine := pushSample(t, src, "v1")
	if len(genuine.Manifest.Layers) < 2 {
		t.Fatalf("the sample was not cut into parts: %d layers", len(genuine.Manifest.Layers))
	}
	// The forged manifest: the genuine parts, reversed.
	layers := slices.Clone(genuine.Manifest.Layers)
	slices.Reverse(layers)
	sum := sha256.Sum256(mustRead(t, sampleBundle))
	raw := ocitransport.BundleManifest(layers, genuine.FileSize, sum[:], "translate.ampb", genuine.BundleID, genuine.Version)
	plantManifest(t, srcDir, raw, "forged")

	srcRO := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadOnly)
	// The destination is new, or holds the genuine parts already (a copy
	// of v1 before): then the parts are not read from the source.
	for _, holdsParts := range []bool{false, true} {
		dstDir := filepath.Join(t.TempDir(), "dst")
		dst := mustOpen(t, "oci-layout:"+dstDir, ocitransport.Options{}, ocitransport.ReadWrite)
		if holdsParts {
			if _, _, err := ocitransport.Copy(ctx, srcRO, "v1", dst, "v1"); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := ocitransport.Copy(ctx, srcRO, "forged", dst, "forged")
		if nameOf(err) != string(ocitransport.ErrDigest) {
			t.Errorf("holds parts %v: a copy of parts that are not the file: %v (%s), want %s", holdsParts, err, nameOf(err), ocitransport.ErrDigest)
		}
		tags, terr := mustOpen(t, "oci-layout:"+dstDir, ocitransport.Options{}, ocitransport.ReadOnly).Tags(ctx)
		if terr != nil {
			t.Fatal(terr)
		}
		if slices.Contains(tags, "forged") {
			t.Errorf("holds parts %v: the destination tags a bundle whose parts are not its file (%s)", holdsParts, hex.EncodeToString(sum[:4]))
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// plantManifest writes the image manifest raw into the layout folder dir
// behind the writer's back, listed in its index.json, tagged tag (none
// when empty).
func plantManifest(t *testing.T, dir string, raw []byte, tag string) {
	t.Helper()
	d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", d.Digest.Encoded()), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if tag != "" {
		d.Annotations = map[string]string{ocispec.AnnotationRefName: tag}
	}
	p := filepath.Join(dir, "index.json")
	var idx ocispec.Index
	if err := json.Unmarshal(mustRead(t, p), &idx); err != nil {
		t.Fatal(err)
	}
	idx.Manifests = append(idx.Manifests, d)
	raw, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".new", raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
}
