package catalog_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/resolver"
)

// Example reads the model of a store holding one bundle, prints its
// listing, and serves the catalog pages from it.
func Example() {
	dir, _ := os.MkdirTemp("", "catalog-example-")
	defer os.RemoveAll(dir)
	now := func() time.Time { return time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC) }
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize)) // TEST-ONLY
	v, _ := capability.ParseVersion("1.0.0")
	var file bytes.Buffer
	_, err := bundle.Write(&file, &bundle.Draft{BundleID: "org.example.echo", Version: 1, CreatedAt: now().Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("echo.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))},
		Capabilities: []capability.Descriptor{{Name: "org.example.echo", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}}},
	}, []ed25519.PrivateKey{key}, bundle.WriteOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Create: true, Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	_ = s.TrustAdd("example", key.Public().(ed25519.PublicKey), []string{"org.example"})
	if _, err := s.Import(context.Background(), &file, resolver.ImportOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	m, err := catalog.Read(s, catalog.ReadOptions{Now: now, Parts: catalog.AllParts})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range m.Listing().Capabilities {
		fmt.Println(c.Name, c.Versions[0].Version, c.Versions[0].BundleID)
	}
	fmt.Println("created", m.Bundles[0].CreatedAt, "matrix cells", len(m.Matrices[0].Cells))

	h, err := catalog.NewHandler(catalog.Options{Source: s, Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/cap?name=org.example.echo", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Security-Policy"))
	// Output:
	// org.example.echo 1.0.0 org.example.echo
	// created 2026-11-20T11:00:00Z matrix cells 1
	// 200 default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'
}
