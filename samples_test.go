package ampbundle

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSamplesEmbedded: the embedded samples are exactly the sources under
// testdata/bundles, and no key file is among them.
func TestSamplesEmbedded(t *testing.T) {
	n := 0
	err := fs.WalkDir(Samples, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if strings.Contains(p, "/keys/") || strings.HasSuffix(p, ".pem") {
			t.Errorf("%s is embedded: key files must stay out of the binary", p)
		}
		embedded, _ := Samples.ReadFile(p)
		onDisk, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil || !bytes.Equal(embedded, onDisk) {
			t.Errorf("%s differs from the file on disk (%v)", p, err)
		}
		return nil
	})
	if err != nil || n < 20 {
		t.Fatalf("%d embedded files (%v)", n, err)
	}
}
