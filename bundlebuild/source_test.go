package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/keyfile"
)

var update = flag.Bool("update", false, "rewrite testdata/bundles/*.ampb from their sources")

// SampleCreated is the created_at of the committed sample bundles.
var sampleCreated = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

type sample struct{ name, key string }

var samples = []sample{{"translate", "example-publisher"}, {"geo", "acme-publisher"}}

func sampleKey(t testing.TB, name string) ed25519.PrivateKey {
	t.Helper()
	// The committed test key's mode depends on the checkout's umask, so it
	// is parsed here without keyfile's permission check.
	data, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", "keys", "TEST-ONLY-"+name+".key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := keyfile.ParsePrivate(data)
	if err != nil {
		t.Fatal(err)
	}
	return k.Ed25519
}

func buildSample(t testing.TB, s sample, dir string) []byte {
	t.Helper()
	k := sampleKey(t, s.key)
	d, err := LoadSource(dir, SourceOptions{CreatedAt: sampleCreated, Signer: k.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	return buf.Bytes()
}

// TestSampleBundlesRebuild: rebuilding each sample source with the same key
// and created_at gives the committed bytes (reproducible builds).
func TestSampleBundlesRebuild(t *testing.T) {
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			got := buildSample(t, s, filepath.Join("..", "testdata", "bundles", s.name))
			path := filepath.Join("..", "testdata", "bundles", s.name+".ampb")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./bundle -run TestSampleBundlesRebuild -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("rebuilding %s gives different bytes (%d vs %d)", s.name, len(got), len(want))
			}
		})
	}
}

// TestSampleBundlesVerify: each sample verifies for its own publisher and
// namespace only.
func TestSampleBundlesVerify(t *testing.T) {
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	translate, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	geo, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", "geo.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	r, arts, err := readAll(translate, trust(example, "org.example"), testNow)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Manifest()
	if len(m.Capabilities) != 4 || m.Aliases["translate"] != "org.example.translate.text" || len(arts) != len(m.Artifacts) {
		t.Fatalf("translate manifest: %d capabilities", len(m.Capabilities))
	}
	if _, _, err := readAll(geo, trust(acme, "com.acme"), testNow); err != nil {
		t.Fatal(err)
	}
	_, _, err = readAll(geo, trust(example, "org.example"), testNow) // wrong key
	expectName(t, err, bundle.ErrUntrustedKey)
	_, _, err = readAll(geo, trust(acme, "org.example"), testNow) // right key, another namespace
	expectName(t, err, bundle.ErrUntrustedNamespace)
	_, _, err = readAll(translate, trust(example, "org.example"), time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC))
	expectName(t, err, bundle.ErrExpired)
}

// copyTree copies the translate sample source to a temporary folder.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSourceRefusals: build refuses, naming the file and the problem.
func TestSourceRefusals(t *testing.T) {
	const v2 = "capabilities/org.example.translate.text/2.1.0/"
	tests := []struct {
		name, file string // the file the message must name
		mod        func(dir string)
		want       amp.ErrName
	}{
		{"schema that is not json", v2 + "input.schema.json", func(d string) {
			write(t, d, v2+"input.schema.json", `{"type":`)
		}, bundle.ErrSource},
		{"json that is not a json schema", v2 + "output.schema.json", func(d string) {
			write(t, d, v2+"output.schema.json", `{"type":"no-such-type"}`)
		}, bundle.ErrSource},
		{"$ref to a missing file", v2 + "input.schema.json", func(d string) {
			write(t, d, v2+"input.schema.json", `{"$ref":"../../../schemas/common/missing.json"}`)
		}, bundle.ErrSource},
		{"$ref to the network", v2 + "input.schema.json", func(d string) {
			write(t, d, v2+"input.schema.json", `{"$ref":"https://json.schemastore.org/package.json"}`)
		}, bundle.ErrSource},
		{"$ref to the file system", v2 + "input.schema.json", func(d string) {
			write(t, d, v2+"input.schema.json", `{"$ref":"file:///etc/hostname"}`)
		}, bundle.ErrSource},
		{"two schemas with one $id", "schemas/common/text.json", func(d string) {
			write(t, d, "schemas/common/text.json", `{"$id":"https://schemas.example.org/common/language.json","type":"string"}`)
		}, bundle.ErrSource},
		{"unexpected file", "notes.txt", func(d string) { write(t, d, "notes.txt", "hello") }, bundle.ErrSource},
		{"hidden file", ".DS_Store", func(d string) { write(t, d, ".DS_Store", "x") }, bundle.ErrSource},
		{"unsafe file name", "schemas/a b.json", func(d string) { write(t, d, "schemas/a b.json", "{}") }, bundle.ErrSource},
		{"keys equal but for case", "schemas/Common/text.json", func(d string) { write(t, d, "schemas/Common/text.json", "{}") }, bundle.ErrSource},
		{"name in capability.json differs from the folder", v2 + "capability.json", func(d string) {
			write(t, d, v2+"capability.json", `{"name":"org.example.translate.other"}`)
		}, bundle.ErrSource},
		{"unsupported range form", v2 + "capability.json", func(d string) {
			write(t, d, v2+"capability.json", `{"supported_ranges":["^2.0.0"]}`)
		}, bundle.ErrSource},
		{"computed field given", v2 + "capability.json", func(d string) {
			write(t, d, v2+"capability.json", `{"input_schema":{"hash":"00"}}`)
		}, bundle.ErrSource},
		{"missing output schema", v2 + "output.schema.json", func(d string) { os.Remove(filepath.Join(d, v2+"output.schema.json")) }, bundle.ErrSource},
		{"folder that is not a version", "capabilities/org.example.translate.text/2.1", func(d string) {
			os.Rename(filepath.Join(d, v2), filepath.Join(d, "capabilities/org.example.translate.text/2.1"))
		}, bundle.ErrSource},
		{"invalid did document", "dids/translator.json", func(d string) { write(t, d, "dids/translator.json", `{"id":"nope"}`) }, bundle.ErrSource},
		{"alias to a missing capability", "bundle.json", func(d string) {
			write(t, d, "bundle.json", `{"bundle_id":"org.example.translate","version":1,"aliases":{"x":"org.example.translate.nope"}}`)
		}, bundle.ErrSource},
		{"unknown bundle.json field", "bundle.json", func(d string) {
			write(t, d, "bundle.json", `{"bundle_id":"org.example.translate","version":1,"verison":2}`)
		}, bundle.ErrSource},
		{"symbolic link", "schemas/link.json", func(d string) {
			os.Symlink("/etc/hostname", filepath.Join(d, "schemas/link.json"))
		}, bundle.ErrSource},
	}
	src := filepath.Join("..", "testdata", "bundles", "translate")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTree(t, src)
			tt.mod(dir)
			_, err := LoadSource(dir, SourceOptions{CreatedAt: sampleCreated})
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
			if msg := amp.AsError(err).Message; !strings.Contains(msg, tt.file) {
				t.Fatalf("message %q does not name the file %s", msg, tt.file)
			}
		})
	}
	// The unmodified copy builds.
	if _, err := LoadSource(copyTree(t, src), SourceOptions{CreatedAt: sampleCreated}); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
