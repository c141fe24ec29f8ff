package bundlebuild

import (
	"crypto/ed25519"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestBuildRefusesSchemaChangedAfterCheck: a build no longer holds the
// source's schemas in memory between checking and writing them, so a
// schema edited (or swapped) in between must not reach the bundle unchecked:
// the write fails, naming the file, whichever schema changed. (The manifest
// Write signs carries the hashes of the bytes that were checked.)
func TestBuildRefusesSchemaChangedAfterCheck(t *testing.T) {
	for _, victim := range []string{
		"capabilities/org.example.translate.text/2.1.0/input.schema.json",
		"schemas/common/text.json",
	} {
		t.Run(victim, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
			k := testKey(1)
			d, err := LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey)})
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(victim))
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, append(data, ' '), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = bundle.Write(io.Discard, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{})
			if !errors.Is(err, bundle.ErrSource) || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "changed while the bundle was being") {
				t.Fatalf("write after %s changed: %v", victim, err)
			}
		})
	}
}

// TestBuildRefusesSchemaThatGrewAfterCheck: a schema replaced by a much
// larger file between check and write is refused after at most one byte
// more than was checked is copied (threat: a swapped file making the
// writer copy without bound).
func TestBuildRefusesSchemaThatGrewAfterCheck(t *testing.T) {
	const victim = "schemas/common/text.json"
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	k := testKey(1)
	d, err := LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	var checked int64
	for _, a := range d.Artifacts {
		if a.Key == victim {
			checked = a.Size
		}
	}
	if checked == 0 {
		t.Fatalf("%s is not an artifact of the draft", victim)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(victim)), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var out countingWriter
	_, err = bundle.Write(&out, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{})
	if !errors.Is(err, bundle.ErrSource) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("write after %s grew: %v", victim, err)
	}
	if out.n > 1<<20 {
		t.Fatalf("%d bytes written for a bundle of a few KiB", out.n)
	}
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(b []byte) (int, error) {
	c.n += int64(len(b))
	return len(b), nil
}
