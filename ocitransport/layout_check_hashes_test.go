package ocitransport

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/amp"
)

// mapFiles is a layout held in memory, for checkLayout.
type mapFiles map[string][]byte

func (m mapFiles) size(name string) (int64, error) {
	b, ok := m[name]
	if !ok {
		return 0, fs.ErrNotExist
	}
	return int64(len(b)), nil
}

func (m mapFiles) read(name string, n int64) ([]byte, error) { return m[name][:n], nil }

// TestLayoutCheckFollowsNoManifestThatIsNotItsDigest: the attack. The
// bounds of a layout's open (checkLayout) follow each manifest's
// descriptors; a file under a manifest's digest name holding other bytes
// (a manifest listing nothing, of the same size) was decoded unhashed, so
// the walk bounded a manifest oras-go never reads, and a swap back to the
// genuine one, listing up to the bounds' worth of others, went unbounded.
// What is under a digest's name is now hashed before it is walked:
// oci_digest_mismatch (docs/SPEC-DECISIONS.md OCI-24). A tar is checked
// through the same walk.
func TestLayoutCheckFollowsNoManifestThatIsNotItsDigest(t *testing.T) {
	decoy := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`)
	genuine := bytes.Repeat([]byte{'g'}, len(decoy))
	d := digest.FromBytes(genuine)
	index := fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"mediaType":%q,"digest":%q,"size":%d}]}`, ocispec.MediaTypeImageManifest, d, len(decoy))
	files := mapFiles{
		ocispec.ImageIndexFile:        []byte(index),
		"blobs/sha256/" + d.Encoded(): decoy,
	}
	o := Options{}
	o.defaults()
	_, err := checkLayout(files, &o)
	if ae := (*amp.Error)(nil); !errors.As(err, &ae) || amp.NameOf(ae) != ErrDigest {
		t.Fatalf("a manifest file that is not its digest was walked: %v, want %s", err, ErrDigest)
	}
}
