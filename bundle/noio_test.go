package bundle

import (
	gobuild "go/build"
	"strconv"
	"strings"
	"testing"
)

// TestBundleOpensNoFileAndImportsNoCompat keeps package bundle the format
// alone (threat: a change that gives the reader or the trust policy a path
// to the file system, or to compat's schema walking, lets a verdict depend
// on more than the bytes, the key set and the time it is handed): its
// non-test files import neither compat nor a package that opens, creates,
// renames or lists files. Building and part files live in bundlebuild.
func TestBundleOpensNoFileAndImportsNoCompat(t *testing.T) {
	forbidden := map[string]bool{
		"os": true, "io/fs": true, "io/ioutil": true, "path/filepath": true, "syscall": true,
		"github.com/ampbundle/ampbundle/compat":                 true,
		"github.com/ampbundle/ampbundle/bundlebuild":            true,
		"github.com/ampbundle/ampbundle/internal/offlineschema": true,
	}
	ctx := gobuild.Default
	for _, goos := range []string{"linux", "windows", "darwin"} {
		ctx.GOOS = goos
		p, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.GoFiles) == 0 {
			t.Fatalf("%s: no Go files found", goos)
		}
		for _, im := range p.Imports {
			if forbidden[im] || strings.HasPrefix(im, "golang.org/x/sys") {
				t.Errorf("%s: package bundle imports %s", goos, strconv.Quote(im))
			}
		}
	}
}
