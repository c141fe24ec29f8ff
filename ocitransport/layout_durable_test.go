package ocitransport

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestLayoutBlobIsDurableBeforeTheIndexNamesIt: the failure. A blob was
// linked into blobs/sha256 and index.json, naming it, replaced (and
// synced) without blobs/sha256 being synced: after a power loss the file
// system may keep the new index.json and lose the blob's name, a layout
// whose index names a manifest it does not hold. Every index.json a
// writer saves now follows a sync of blobs/sha256 made after the last
// blob linked (docs/SPEC-DECISIONS.md OCI-24).
func TestLayoutBlobIsDurableBeforeTheIndexNamesIt(t *testing.T) {
	ctx := context.Background()
	e, err := Open(ctx, Location{Kind: KindLayout, Path: filepath.Join(t.TempDir(), "layout")}, Options{}, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var steps []string
	e.dst.(*layoutStore).trace = func(step string) { steps = append(steps, step) }
	f, err := os.Open("../testdata/bundles/translate.ampb")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := e.PushBundle(ctx, f, "translate.ampb", "v1"); err != nil {
		t.Fatal(err)
	}
	links, saves, synced := 0, 0, true
	for i, s := range steps {
		switch s {
		case "link":
			links++
			synced = false
		case "sync":
			synced = true
		case "save":
			saves++
			if !synced {
				t.Errorf("index.json saved (step %d of %v) before the blobs linked were synced", i, steps)
			}
		}
	}
	if links == 0 || saves == 0 {
		t.Fatalf("steps %v: want blobs linked and index.json saved", steps)
	}
}
