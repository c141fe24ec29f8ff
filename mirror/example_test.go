package mirror_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
)

// An import station serves its store; another host reads the index and
// fetches a bundle file, byte for byte what was imported.
func Example() {
	dir, _ := os.MkdirTemp("", "mirror-example-")
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "station.db")
	publisher := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize)) // example only
	v, _ := capability.ParseVersion("1.0.0")
	schema := []byte(`{"type":"object"}`)
	var file bytes.Buffer
	bundle.Write(&file, &bundle.Draft{BundleID: "org.example.echo", Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("echo.json", bundle.MediaTypeSchema, schema)},
		Capabilities: []capability.Descriptor{{Name: "org.example.echo", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}}},
	}, []ed25519.PrivateKey{publisher}, bundle.WriteOptions{})
	st, _ := resolver.Open(db, resolver.Options{Create: true})
	st.TrustAdd("example", publisher.Public().(ed25519.PublicKey), []string{"org.example"})
	st.Import(context.Background(), bytes.NewReader(file.Bytes()), resolver.ImportOptions{})
	st.Close()

	m, err := mirror.New(mirror.Options{
		Open:     func() (mirror.Source, error) { return resolver.Open(db, resolver.Options{ReadOnly: true}) },
		SpoolDir: filepath.Join(dir, "spool"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(m)
	defer srv.Close()

	resp, _ := srv.Client().Get(srv.URL + mirror.IndexPath)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ix, _ := mirror.DecodeIndex(raw)
	fmt.Println(ix.Bundles[0].BundleID, ix.Bundles[0].Version, ix.Capabilities[0].ID)
	resp, _ = srv.Client().Get(srv.URL + ix.Bundles[0].Href)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(bytes.Equal(got, file.Bytes()))
	// Output:
	// org.example.echo 1 org.example.echo:1.0.0
	// true
}
