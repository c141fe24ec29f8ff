package bundle_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// exampleKey is a fixed key so that the example's output is stable. Never
// use a key derived from a public seed outside an example.
func exampleKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
}

// Build a bundle with one capability and its two schemas, then read it back
// as an operator does: signatures, trust scope and every artifact's hash
// are verified before anything is returned.
func Example() {
	key := exampleKey()
	version, _ := capability.ParseVersion("1.0.0")
	schema := []byte(`{"type":"object"}`)
	draft := &bundle.Draft{
		BundleID:  "org.example.echo",
		Version:   1,
		CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{
			bundle.BytesSource("echo/input.json", bundle.MediaTypeSchema, schema),
			bundle.BytesSource("echo/output.json", bundle.MediaTypeSchema, schema),
		},
		Capabilities: []capability.Descriptor{{
			Name:         "org.example.echo",
			Version:      version,
			InputSchema:  capability.SchemaRef{ArtifactKey: "echo/input.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "echo/output.json"},
		}},
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, draft, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	policy := &bundle.Policy{Keys: []bundle.TrustedKey{{
		Name: "example", Key: key.Public().(ed25519.PublicKey), Scopes: []string{"org.example"},
	}}}
	r, err := bundle.NewReader(bytes.NewReader(file.Bytes()), bundle.ReaderOptions{Policy: policy, Now: time.Now})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Manifest().BundleID, "version", r.Manifest().Version, "signed by", r.Signers()[0].Name)
	for {
		a, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d verified bytes\n", a.Key, len(a.Data))
	}
	// Output:
	// org.example.echo version 1 signed by example
	// echo/input.json: 17 verified bytes
	// echo/output.json: 17 verified bytes
}

// A key trusted only for another namespace cannot publish here: the
// refusal comes before any artifact is read.
func ExampleNewReader_untrustedNamespace() {
	key := exampleKey()
	draft := &bundle.Draft{
		BundleID:  "org.example.echo",
		Version:   1,
		CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("notes.json", bundle.MediaTypeSchema, []byte(`{}`))},
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, draft, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	policy := &bundle.Policy{Keys: []bundle.TrustedKey{{
		Name: "acme", Key: key.Public().(ed25519.PublicKey), Scopes: []string{"com.acme"},
	}}}
	_, err := bundle.NewReader(&file, bundle.ReaderOptions{Policy: policy, Now: time.Now})
	fmt.Println(errors.Is(err, bundle.ErrUntrustedNamespace))
	// Output:
	// true
}
