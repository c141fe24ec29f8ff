package bundlebuild_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// Load a source folder (docs/FORMAT.md §8) and build the signed bundle
// file from it: LoadSource checks every file and derives the descriptors;
// bundle.Write signs and writes the format.
func ExampleLoadSource() {
	dir, err := os.MkdirTemp("", "source")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	capDir := filepath.Join(dir, "capabilities", "org.example.echo.say", "1.0.0")
	files := map[string]string{
		filepath.Join(dir, "bundle.json"):           `{"bundle_id": "org.example.echo", "version": 1}`,
		filepath.Join(capDir, "capability.json"):    `{}`,
		filepath.Join(capDir, "input.schema.json"):  `{"type": "object", "properties": {"text": {"type": "string"}}}`,
		filepath.Join(capDir, "output.schema.json"): `{"type": "object"}`,
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Println(err)
			return
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			fmt.Println(err)
			return
		}
	}
	// A fixed key so that the output is stable: never use a key derived
	// from a public seed outside an example.
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	draft, err := bundlebuild.LoadSource(dir, bundlebuild.SourceOptions{
		CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Signer:    key.Public().(ed25519.PublicKey),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var file bytes.Buffer
	m, err := bundle.Write(&file, draft, []ed25519.PrivateKey{key}, bundle.WriteOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.BundleID, m.Version, len(m.Artifacts), "artifacts")
	for _, c := range m.Capabilities {
		fmt.Println(c.ID())
	}
	// Output:
	// org.example.echo 1 2 artifacts
	// org.example.echo.say:1.0.0
}
