package resolver_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// exampleBundle signs a one-capability bundle with key.
func exampleBundle(key ed25519.PrivateKey) []byte {
	version, _ := capability.ParseVersion("1.0.0")
	schema := []byte(`{"type":"object","required":["text"]}`)
	var file bytes.Buffer
	bundle.Write(&file, &bundle.Draft{
		BundleID: "org.example.echo", Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("echo.json", bundle.MediaTypeSchema, schema)},
		Capabilities: []capability.Descriptor{{Name: "org.example.echo", Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}}},
	}, []ed25519.PrivateKey{key}, bundle.WriteOptions{})
	return file.Bytes()
}

// An operator's whole cycle: trust a publisher for a namespace, import its
// bundle (verified, all or nothing), resolve a schema locally (its hash
// checked before the bytes are returned), remove the bundle, and see the
// same reference fail closed with 5002.
func Example() {
	dir, _ := os.MkdirTemp("", "resolver-example-")
	defer os.RemoveAll(dir)
	store, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	publisher := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize)) // example only
	if err := store.TrustAdd("example", publisher.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := store.Import(context.Background(), bytes.NewReader(exampleBundle(publisher)), resolver.ImportOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("imported", res.BundleID, "version", res.Version, res.Capabilities)

	cat, _ := store.Catalog()
	entry, _ := cat.Lookup(capability.ID{Name: "org.example.echo", Version: cat.Versions("org.example.echo")[0]})
	data, err := store.Resolve(entry.Descriptor.InputSchema)
	fmt.Printf("resolved %d verified bytes, err=%v\n", len(data), err)

	store.Remove("org.example.echo")
	_, err = store.Resolve(entry.Descriptor.InputSchema)
	fmt.Println(errors.Is(err, amp.CodeUnavailable), errors.Is(err, resolver.ErrBundleMissing))
	// Output:
	// imported org.example.echo version 1 [org.example.echo:1.0.0]
	// resolved 37 verified bytes, err=<nil>
	// true true
}
