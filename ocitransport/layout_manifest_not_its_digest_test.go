package ocitransport_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutManifestFileThatIsNotItsDigestIsNeverTagged: the attack.
// Another user of a shared layout folder puts, under the name of the
// bundle's manifest (its digest), other bytes of its size, while a writer
// has the layout open: a file the writer finds there when it pushes the
// manifest (unlisted), or the file of a manifest index.json listed when
// the writer opened it (listed). The writer kept such a file unread and
// listed and tagged it: the layout named, under the operator's tag, a
// manifest no reader can read. The file is now hashed before it is taken
// for the manifest: oci_digest_mismatch, and no tag
// (docs/SPEC-DECISIONS.md OCI-24).
func TestLayoutManifestFileThatIsNotItsDigestIsNeverTagged(t *testing.T) {
	scratch := filepath.Join(t.TempDir(), "scratch")
	m := pushSample(t, mustOpen(t, "oci-layout:"+scratch, ocitransport.Options{}, ocitransport.ReadWrite), "v0")
	for _, listed := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "layout")
		setup := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
		if listed {
			pushSample(t, setup, "v0")
		}
		setup.Close()
		ep := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
		p := filepath.Join(dir, "blobs", "sha256", m.Descriptor.Digest.Encoded())
		os.Remove(p)
		if err := os.WriteFile(p, bytes.Repeat([]byte{' '}, int(m.Descriptor.Size)), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(sampleBundle)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ep.PushBundle(t.Context(), f, "translate.ampb", "v1")
		f.Close()
		if nameOf(err) != string(ocitransport.ErrDigest) {
			t.Errorf("listed %v: a push onto a manifest file that is not its digest: %v, want %s", listed, err, ocitransport.ErrDigest)
		}
		var idx ocispec.Index
		if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "index.json")), &idx); err != nil {
			t.Fatal(err)
		}
		for _, d := range idx.Manifests {
			if d.Annotations[ocispec.AnnotationRefName] == "v1" {
				t.Errorf("listed %v: the layout tags v1 a manifest file that is not its digest", listed)
			}
		}
	}
}
