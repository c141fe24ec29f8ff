package mirror

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestBundleWhoseLongIDPassesTheFileNameLimitIsNeverSynced: a bundle_id
// may be up to 254 bytes (a namespace prefix), and the store imports
// such a bundle from a file. Sync named its partial download
// BUNDLE_ID-SHA256.part: 70 bytes past the bundle_id, so for a bundle_id
// over 185 bytes a name longer than a file system takes (255 bytes). Its
// creation failed, and the genuine bundle, signed by the trusted key,
// was refused store_io ("cannot write to the sync spool folder") on every
// run, for ever, on every host: nothing wrong with the disk, and no run
// could get past it. Should: such a file gets a name of fixed length
// (the bundle_id's SHA-256), and is imported; a bundle_id that fits keeps
// its name.
func TestBundleWhoseLongIDPassesTheFileNameLimitIsNeverSynced(t *testing.T) {
	label := func(c string) string { return strings.Repeat(c, 63) }
	for _, tc := range []struct {
		name, id string
	}{
		{"185 bytes, the longest that fits", "org.example." + label("a") + "." + label("b") + "." + strings.Repeat("c", 45)},
		{"186 bytes", "org.example." + label("a") + "." + label("b") + "." + strings.Repeat("c", 46)},
		{"254 bytes, the longest bundle_id", "org.example." + label("a") + "." + label("b") + "." + label("c") + "." + strings.Repeat("d", 50)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := signedBundle(t, tc.id, testKey)
			// The store takes it from a file.
			direct := agentStore(t)
			if _, err := direct.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{}); err != nil {
				t.Fatalf("import of a %d-byte bundle_id: %v", len(tc.id), err)
			}
			hm := newRepeatMirror(t)
			hm.bundle(t, data)
			ts := httptest.NewServer(hm)
			defer ts.Close()
			s := agentStore(t)
			rep, err := syncOnce(t, s, ts.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported {
				t.Fatalf("sync of a genuine bundle with a %d-byte bundle_id: %+v, want imported", len(tc.id), rep.Items)
			}
			name := partName(IndexEntry{BundleID: tc.id, SHA256: sum(data)})
			if len(name) > maxSpoolNameLen {
				t.Fatalf("spool name of %d bytes", len(name))
			}
			if fits := len(tc.id) <= 185; fits != strings.HasPrefix(name, tc.id+"-") {
				t.Fatalf("spool name %q for a bundle_id of %d bytes", name, len(tc.id))
			}
			// Nothing is left in the spool once it is imported.
			spool := filepath.Join(filepath.Dir(s.Path()), "sync")
			if _, err := os.Lstat(filepath.Join(spool, name)); !os.IsNotExist(err) {
				t.Fatalf("partial file left after the import: %v", err)
			}
		})
	}
}
