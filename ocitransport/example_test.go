package ocitransport_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// Push a bundle into an OCI image layout and pull it back: the manifest's
// digest depends only on the file and its name.
func Example() {
	dir, err := os.MkdirTemp("", "ocitransport-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	loc, err := ocitransport.ParseLocation("oci-layout:" + filepath.Join(dir, "layout") + ":v1")
	if err != nil {
		panic(err)
	}
	dst, err := ocitransport.Open(ctx, loc, ocitransport.Options{}, ocitransport.ReadWrite)
	if err != nil {
		panic(err)
	}
	defer dst.Close()
	f, err := os.Open("../testdata/bundles/translate.ampb")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	pushed, err := dst.PushBundle(ctx, f, "translate.ampb", loc.Reference)
	if err != nil {
		panic(err)
	}
	src, err := ocitransport.Open(ctx, loc, ocitransport.Options{}, ocitransport.ReadOnly)
	if err != nil {
		panic(err)
	}
	defer src.Close()
	a, err := src.Resolve(ctx, "v1")
	if err != nil {
		panic(err)
	}
	if err := src.PullFile(ctx, a, filepath.Join(dir, "pulled.ampb")); err != nil {
		panic(err)
	}
	fmt.Println(pushed.Descriptor.Digest)
	fmt.Println(a.Kind, a.BundleID, a.Version, a.FileSize)
	// Output:
	// sha256:d1bcdd3f19e3c5932cc9faa492ac94b948f5c5c7cc289d68df6804edac4ac803
	// bundle org.example.translate 1 8517
}
