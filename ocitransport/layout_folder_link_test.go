//go:build unix

package ocitransport_test

import (
	"bytes"
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

// attackerFolder is a folder of the attacker's, holding under each name
// the folder rel of the layout dir holds (after swapForLink: moved to
// moved) other bytes: what a reader follows there fails its digest check.
func attackerFolder(t *testing.T, moved string) string {
	t.Helper()
	evil := filepath.Join(t.TempDir(), "evil")
	err := filepath.WalkDir(moved, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moved, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(evil, rel), 0o755)
		}
		return os.WriteFile(filepath.Join(evil, rel), []byte("not the blob"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return evil
}

// relink points the link swapForLink left at rel of dir to target.
func relink(t *testing.T, dir, rel, target string) {
	t.Helper()
	from := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.Remove(from); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, from); err != nil {
		t.Fatal(err)
	}
}

// TestLayoutFolderSwappedForALinkIsNeverFollowedByAReader: the attack.
// Whoever may write into a layout folder another reads replaces blobs or
// blobs/sha256 with a symbolic link to a folder of their choosing after
// the reader checked the layout (the open refuses one that is there
// then). Before review 106 the reader's files were opened by path: the
// folder link was followed (only a link as the file's own name was
// refused), and the blobs were read from wherever it led. Each folder is
// now opened from the layout's root without following a link, once per
// endpoint (docs/SPEC-DECISIONS.md OCI-21, OCI-24; on every system,
// OCI-26): the reader reads the folder it opened and checked, wherever it
// was moved, and nothing of
// the folder the link names (which holds other bytes under every name: a
// read there is oci_digest_mismatch).
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
			moved := swapForLink(t, dir, rel, t.TempDir())
			relink(t, dir, rel, attackerFolder(t, moved))
			out := filepath.Join(t.TempDir(), "out.ampb")
			if err := src.PullFile(ctx, a, out); err != nil {
				t.Fatalf("a pull through %s swapped for a link: %v (%s), want the folder checked read", rel, err, nameOf(err))
			}
			if !bytes.Equal(mustRead(t, out), mustRead(t, sampleBundle)) {
				t.Errorf("a pull through %s swapped for a link is not the bundle", rel)
			}
		})
	}
}

// TestLayoutFolderSwappedForALinkIsNeverWrittenThrough: the attack, on a
// writer. blobs/sha256 of a layout being written is replaced with a link
// to another folder the writer may write (the attacker's, or one of the
// writer's own). Before review 106 oras-go's store created its files
// through the link: the bundle's blobs were written into the folder the
// link named, and the manifest read back from there. The writer now
// writes into the folder it opened, wherever it was moved, and nothing
// into the folder the link names (docs/SPEC-DECISIONS.md OCI-21, OCI-24,
// OCI-26).
func TestLayoutFolderSwappedForALinkIsNeverWrittenThrough(t *testing.T) {
	for _, rel := range []string{"blobs", "blobs/sha256"} {
		t.Run(rel, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			ep := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
			swapForLink(t, dir, rel, t.TempDir())
			elsewhere := t.TempDir()
			if rel == "blobs" {
				if err := os.Mkdir(filepath.Join(elsewhere, "sha256"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			relink(t, dir, rel, elsewhere)
			f, err := os.Open(sampleBundle)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err = ep.PushBundle(t.Context(), f, "translate.ampb", "v1"); err != nil {
				t.Errorf("a push through %s swapped for a link: %v (%s), want it written into the folder opened", rel, err, nameOf(err))
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
