//go:build unix

package mirror

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestServedSpoolFileSwappedForALinkDisclosesAnyFile: the mirror serves a
// bundle file by opening, at each request, the file it exported into its
// spool folder (SHA256.bundle), by name, links followed. Whoever may write
// that folder (`ampbundle serve --spool DIR` where DIR, or a folder above
// it, is another user's: a /tmp/ampmirror made first by that user) puts
// there, under that name, a link (symbolic, or hard on the same file
// system) to any file the mirror's user may read (a key, the store), and
// any peer that asks the bundle gets it, up to the bundle's size. Should:
// the mirror serves only the file it exported (the same file, by device
// and inode); another one in its place is not served (500
// internal_error), and nothing of it is sent.
func TestServedSpoolFileSwappedForALinkDisclosesAnyFile(t *testing.T) {
	v1 := testBundle(t, 1)
	for _, tc := range []struct {
		name string
		put  func(secret, path string) error
	}{
		{"a symbolic link", func(secret, path string) error { return os.Symlink(secret, path) }},
		{"a hard link", func(secret, path string) error { return os.Link(secret, path) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ts := startMirror(t, newStore(t, v1), nil)
			files := globSpool(t, m)
			if len(files) != 1 {
				t.Fatalf("spool: %v", files)
			}
			secret := bytes.Repeat([]byte("SECRET KEY MATERIAL "), len(v1)/10)
			sp := filepath.Join(filepath.Dir(files[0]), "..", "secret") // one file system, as a hard link needs
			if err := os.WriteFile(sp, secret, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(files[0]); err != nil {
				t.Fatal(err)
			}
			if err := tc.put(sp, files[0]); err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(ts.URL + BundlesPrefix + "org.example.echo")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(body, []byte("SECRET")) {
				t.Fatalf("the mirror served %d bytes of a file put in its spool file's place (status %d)", len(body), resp.StatusCode)
			}
			if resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("status %d, want 500", resp.StatusCode)
			}
		})
	}
}
