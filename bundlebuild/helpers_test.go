package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// The helpers of package bundle's tests that the build and part-file
// tests use, on bundle's exported API.

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
}

func trust(k ed25519.PrivateKey, scopes ...string) *bundle.Policy {
	return &bundle.Policy{Keys: []bundle.TrustedKey{{Name: "test", Key: k.Public().(ed25519.PublicKey), Scopes: scopes}}}
}

func mustVersion(t testing.TB, s string) capability.Version {
	v, err := capability.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// smallDraft is a minimal bundle: one capability and a shared schema.
func smallDraft(t testing.TB) *bundle.Draft {
	in := `{"type":"object","required":["text"],"properties":{"text":{"$ref":"../../../schemas/text.json"}}}`
	out := `{"type":"object"}`
	return &bundle.Draft{
		BundleID: "org.example.demo", Version: 3, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{
			bundle.BytesSource("capabilities/org.example.demo.echo/1.0.0/input.schema.json", bundle.MediaTypeSchema, []byte(in)),
			bundle.BytesSource("capabilities/org.example.demo.echo/1.0.0/output.schema.json", bundle.MediaTypeSchema, []byte(out)),
			bundle.BytesSource("schemas/text.json", bundle.MediaTypeSchema, []byte(`{"type":"string","maxLength":64}`)),
		},
		Capabilities: []capability.Descriptor{{
			Name: "org.example.demo.echo", Version: mustVersion(t, "1.0.0"),
			InputSchema:  capability.SchemaRef{ArtifactKey: "capabilities/org.example.demo.echo/1.0.0/input.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "capabilities/org.example.demo.echo/1.0.0/output.schema.json"},
		}},
	}
}

func build(t testing.TB, d *bundle.Draft, keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, keys, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads a whole bundle, keeping the artifacts.
func readAll(data []byte, p *bundle.Policy, now time.Time) (*bundle.Reader, []*bundle.Artifact, error) {
	r, err := bundle.NewReader(bytes.NewReader(data), bundle.ReaderOptions{Policy: p, Now: func() time.Time { return now }})
	if err != nil {
		return nil, nil, err
	}
	var arts []*bundle.Artifact
	for {
		a, err := r.Next()
		if err == io.EOF {
			return r, arts, nil
		}
		if err != nil {
			return r, arts, err
		}
		arts = append(arts, a)
	}
}

func expectName(t *testing.T, err error, name amp.ErrName) {
	t.Helper()
	if !errors.Is(err, name) {
		t.Fatalf("got %v, want %s", err, name)
	}
}
