package ocitransport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// repoint makes the symbolic link l name target (a rename over it).
func repoint(t *testing.T, l, target string) {
	t.Helper()
	if err := os.Symlink(target, l+".new"); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	if err := os.Rename(l+".new", l); err != nil {
		t.Fatal(err)
	}
}

// tagsIn are the tags index.json of the layout dir lists.
func tagsIn(t *testing.T, dir string) []string {
	t.Helper()
	var idx ocispec.Index
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "index.json")), &idx); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, d := range idx.Manifests {
		if r, ok := d.Annotations[ocispec.AnnotationRefName]; ok {
			tags = append(tags, r)
		}
	}
	return tags
}

// TestLayoutRootRepointedMidOperationIsNeverFollowed: the attack. The
// operator names a layout through a link (a shared path another may
// repoint). Every read and write walked that path again from its start:
// repointed after the open, a reader had the layout checked in one
// folder and the blobs read from another (the attacker's, with other
// bytes under the same names: oci_digest_mismatch), and a writer wrote
// its blobs and tag into the other folder. An endpoint now opens its
// layout's folders once and reads and writes through them until it is
// closed (docs/SPEC-DECISIONS.md OCI-24), on every system: as an
// os.Root each, where OCI-24 held them by descriptor only on Linux with
// its proc file system and walked the path again elsewhere (OCI-26).
func TestLayoutRootRepointedMidOperationIsNeverFollowed(t *testing.T) {
	t.Run("reader", func(t *testing.T) {
		ctx := context.Background()
		base := t.TempDir()
		genuine := filepath.Join(base, "genuine")
		pushSample(t, mustOpen(t, "oci-layout:"+genuine, ocitransport.Options{}, ocitransport.ReadWrite), "v1")
		evil := filepath.Join(base, "evil")
		err := filepath.WalkDir(genuine, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(genuine, p)
			switch {
			case d.IsDir():
				return os.MkdirAll(filepath.Join(evil, rel), 0o755)
			case filepath.Dir(rel) == filepath.Join("blobs", "sha256"):
				return os.WriteFile(filepath.Join(evil, rel), []byte("not the blob"), 0o644)
			}
			return os.WriteFile(filepath.Join(evil, rel), mustRead(t, p), 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(base, "shared")
		repoint(t, link, genuine)
		src := mustOpen(t, "oci-layout:"+link, ocitransport.Options{}, ocitransport.ReadOnly)
		a, err := src.Resolve(ctx, "v1")
		if err != nil {
			t.Fatal(err)
		}
		repoint(t, link, evil)
		out := filepath.Join(t.TempDir(), "out.ampb")
		if err := src.PullFile(ctx, a, out); err != nil {
			t.Fatalf("a pull after the layout's path was repointed: %v (%s), want the layout opened read", err, nameOf(err))
		}
		if !bytes.Equal(mustRead(t, out), mustRead(t, sampleBundle)) {
			t.Error("a pull after the layout's path was repointed is not the bundle")
		}
	})
	t.Run("writer", func(t *testing.T) {
		base := t.TempDir()
		first, other := filepath.Join(base, "first"), filepath.Join(base, "other")
		for _, d := range []string{first, other} {
			mustOpen(t, "oci-layout:"+d, ocitransport.Options{}, ocitransport.ReadWrite).Close()
		}
		link := filepath.Join(base, "shared")
		repoint(t, link, first)
		ep := mustOpen(t, "oci-layout:"+link, ocitransport.Options{}, ocitransport.ReadWrite)
		repoint(t, link, other)
		pushSample(t, ep, "v1")
		if tags := tagsIn(t, other); len(tags) != 0 {
			t.Errorf("the writer tagged %v in the folder its path was repointed to", tags)
		}
		if ents, _ := os.ReadDir(filepath.Join(other, "blobs", "sha256")); len(ents) != 0 {
			t.Errorf("the writer wrote %d blobs into the folder its path was repointed to", len(ents))
		}
		if tags := tagsIn(t, first); len(tags) != 1 || tags[0] != "v1" {
			t.Errorf("the layout opened holds tags %v, want [v1]", tags)
		}
	})
}
