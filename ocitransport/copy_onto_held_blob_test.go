package ocitransport_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestCopyIntoARegistryHoldingTheBundleAtAnotherSizeIsRefused: the
// attack (or the damage). A destination registry answers the HEAD of the
// bundle's one layer "I have it" at a size that is not the layer's: a
// blob truncated in its storage, or a registry that lies. Before review
// 106 the copy took any HEAD 200 as "held", sent nothing and tagged the
// bundle: the operator's tag named a bundle no pull can import, reported
// copied. A registry keeps the blob it holds under a digest (pushing again
// mends nothing), so the copy is refused, oci_size_mismatch, before any
// tag (docs/SPEC-DECISIONS.md OCI-22).
func TestCopyIntoARegistryHoldingTheBundleAtAnotherSizeIsRefused(t *testing.T) {
	ctx := context.Background()
	srcDir := filepath.Join(t.TempDir(), "src")
	a := pushSample(t, mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadWrite), "v1")
	src := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadOnly)
	layer := a.Manifest.Layers[0]
	reg := &holdingRegistry{blobs: map[string]int64{layer.Digest.String(): layer.Size / 2}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	dst := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadWrite)
	_, _, err := ocitransport.Copy(ctx, src, "v1", dst, "v1")
	if nameOf(err) != string(ocitransport.ErrSize) {
		t.Errorf("a copy into a registry holding the bundle's layer at another size: %v, want %s", err, ocitransport.ErrSize)
	}
	if n := reg.tagPuts.Load(); n != 0 {
		t.Errorf("the bundle was tagged (%d tag PUTs) on a layer the registry holds at another size", n)
	}
}

// TestWriteIntoALayoutHoldingOtherBytesUnderTheBundlesDigestIsRefused:
// the attack. Another user of a shared layout folder puts other bytes
// under the name of a bundle's one layer (blobs/sha256/DIGEST) before a
// copy or a push writes the bundle there. Before review 106 the writer
// saw the name taken, wrote nothing (OCI-5) and tagged the bundle: the tag
// named bytes that are not the bundle, reported written. A layer the
// layout holds is now read back through its digest check before the
// manifest lands: oci_digest_mismatch, nothing tagged
// (docs/SPEC-DECISIONS.md OCI-22).
func TestWriteIntoALayoutHoldingOtherBytesUnderTheBundlesDigestIsRefused(t *testing.T) {
	ctx := context.Background()
	srcDir := filepath.Join(t.TempDir(), "src")
	a := pushSample(t, mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadWrite), "v1")
	layer := a.Manifest.Layers[0]
	for _, tc := range []struct {
		name  string
		write func(dst *ocitransport.Endpoint) error
	}{
		{"copy", func(dst *ocitransport.Endpoint) error {
			src := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadOnly)
			_, _, err := ocitransport.Copy(ctx, src, "v1", dst, "v1")
			return err
		}},
		{"push", func(dst *ocitransport.Endpoint) error {
			f, err := os.Open(sampleBundle)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = dst.PushBundle(ctx, f, "translate.ampb", "v1")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dst")
			dst := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
			other := make([]byte, layer.Size)
			if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", layer.Digest.Encoded()), other, 0o444); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(dst); nameOf(err) != string(ocitransport.ErrDigest) {
				t.Errorf("a %s onto other bytes under the layer's name: %v, want %s", tc.name, err, ocitransport.ErrDigest)
			}
			check := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
			if _, err := check.Resolve(ctx, "v1"); err == nil {
				t.Errorf("the %s tagged the bundle over other bytes under its layer's name", tc.name)
			}
		})
	}
}
