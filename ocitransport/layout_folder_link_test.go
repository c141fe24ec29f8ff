//go:build unix

package ocitransport_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// swapForLink moves the folder rel of the layout dir out of it (into
// elsewhere, under the same name) and puts a symbolic link to it in its
// place: what another user of a shared layout folder can do at any moment.
func swapForLink(t *testing.T, dir, rel, elsewhere string) string {
	t.Helper()
	from := filepath.Join(dir, filepath.FromSlash(rel))
	to := filepath.Join(elsewhere, filepath.Base(from))
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(to, from); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	return to
}

// TestLayoutFolderSwappedForALinkIsNeverFollowedByAReader: the attack.
// Whoever may write into a layout folder another reads replaces blobs or
// blobs/sha256 with a symbolic link to a folder of their choosing after
// the reader checked the layout (the open refuses one that is there
// then). Before review 106 the reader's files were opened by path: the
// folder link was followed (only a link as the file's own name was
// refused), and the blobs were read from wherever it led. Each folder is
// now opened from the layout's root without following a link
// (openLayoutDir): oci_layout_error (docs/SPEC-DECISIONS.md OCI-21).
func TestLayoutFolderSwappedForALinkIsNeverFollowedByAReader(t *testing.T) {
	for _, rel := range []string{"blobs", "blobs/sha256"} {
		t.Run(rel, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "layout")
			pushSample(t, mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite), "v1")
			src := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
			a, err := src.Resolve(ctx, "v1")
			if err != nil {
				t.Fatal(err)
			}
			swapForLink(t, dir, rel, t.TempDir())
			err = src.PullFile(ctx, a, filepath.Join(t.TempDir(), "out.ampb"))
			if nameOf(err) != string(ocitransport.ErrLayout) {
				t.Fatalf("a pull through %s swapped for a link: %v, want %s", rel, err, ocitransport.ErrLayout)
			}
		})
	}
}

// TestLayoutFolderSwappedForALinkIsNeverWrittenThrough: the attack, on a
// writer. blobs/sha256 of a layout being written is replaced with a link
// to another folder the writer may write (the attacker's, or one of the
// writer's own). Before review 106 oras-go's store created its files
// through the link: the bundle's blobs were written into the folder the
// link named, and the manifest read back from there. The write is now
// refused, oci_layout_error, and nothing is written there
// (docs/SPEC-DECISIONS.md OCI-21).
func TestLayoutFolderSwappedForALinkIsNeverWrittenThrough(t *testing.T) {
	for _, rel := range []string{"blobs", "blobs/sha256"} {
		t.Run(rel, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			ep := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
			elsewhere := t.TempDir()
			swapForLink(t, dir, rel, elsewhere)
			f, err := os.Open(sampleBundle)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = ep.PushBundle(t.Context(), f, "translate.ampb", "v1")
			if nameOf(err) != string(ocitransport.ErrLayout) {
				t.Errorf("a push through %s swapped for a link: %v, want %s", rel, err, ocitransport.ErrLayout)
			}
			n := 0
			filepath.WalkDir(elsewhere, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					n++
				}
				return nil
			})
			if n != 0 {
				t.Errorf("%d files were written through %s swapped for a link", n, rel)
			}
		})
	}
}
