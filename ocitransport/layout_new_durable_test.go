package ocitransport

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNewLayoutIsDurableBeforeItIsUsed: the failure. A writer that
// created a layout (its root and the folders above it, blobs/sha256,
// oci-layout, index.json) synced none of it before writing blobs and
// index.json into it, nor a tar's folder after renaming the tar into it:
// after a power loss the file system could keep the blobs, or the
// index.json naming them, in a layout without its oci-layout or its
// blobs folder, or lose the tar's new name. Now every file created is
// synced, and every folder that gained a name (the root's parent
// included) after the name was made, before Open returns; Commit syncs
// the tar's folder after the rename (docs/SPEC-DECISIONS.md OCI-25).
func TestNewLayoutIsDurableBeforeItIsUsed(t *testing.T) {
	ctx := context.Background()
	t.Run("folder", func(t *testing.T) {
		var steps []string
		o := Options{trace: func(s string) { steps = append(steps, s) }}
		root := filepath.Join(t.TempDir(), "site", "layout")
		e, err := Open(ctx, Location{Kind: KindLayout, Path: root}, o, ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		atOpen := slices.Clone(steps)
		for _, want := range []string{"made:..", "made:.", "made:blobs", "made:blobs/sha256", "made:oci-layout", "made:index.json"} {
			if !slices.Contains(atOpen, want) {
				t.Errorf("steps %v: no %s", atOpen, want)
			}
		}
		for i, s := range atOpen {
			name, ok := strings.CutPrefix(s, "made:")
			if !ok {
				continue
			}
			later := atOpen[i+1:]
			if (name == "oci-layout" || name == "index.json") && !slices.Contains(later, "synced:"+name) {
				t.Errorf("%s made, never synced before Open returned: %v", name, atOpen)
			}
			if parent := path.Join(name, ".."); !slices.Contains(later, "synced:"+parent) {
				t.Errorf("%s made, %s (which names it) never synced after, before Open returned: %v", name, parent, atOpen)
			}
		}
	})
	t.Run("tar", func(t *testing.T) {
		var steps []string
		o := Options{trace: func(s string) { steps = append(steps, s) }}
		e, err := Open(ctx, Location{Kind: KindLayoutTar, Path: filepath.Join(t.TempDir(), "site.tar")}, o, ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		f, err := os.Open("../testdata/bundles/translate.ampb")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := e.PushBundle(ctx, f, "translate.ampb", "v1"); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(); err != nil {
			t.Fatal(err)
		}
		i := slices.Index(steps, "renamed:tar")
		if i < 0 || !slices.Contains(steps[i+1:], "synced:tar-folder") {
			t.Errorf("steps %v: the tar's folder not synced after the tar was renamed into it", steps)
		}
	})
}
