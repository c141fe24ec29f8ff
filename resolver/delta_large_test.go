package resolver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// patternSource is an artifact of size bytes generated on the fly (no
// memory), different for every seed.
func patternSource(key, mediaType string, seed, size int) bundle.Source {
	block := make([]byte, 4096)
	for i := range block {
		block[i] = byte(seed*31 + i*7 + i>>8)
	}
	return bundle.Source{Key: key, MediaType: mediaType, Size: int64(size), Open: func() (io.ReadCloser, error) {
		return io.NopCloser(io.LimitReader(&repeatReader{b: block}, int64(size))), nil
	}}
}

type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}

// scaleDraft is a bundle of n generated artifacts of size bytes plus one
// capability whose input schema is the "changed schema": version 2 changes
// it and nothing else.
func scaleDraft(version uint64, n, size int) *bundle.Draft {
	d := &bundle.Draft{BundleID: "org.example.scale", Version: version, CreatedAt: testNow.Add(-time.Hour)}
	for i := 0; i < n; i++ {
		d.Artifacts = append(d.Artifacts, patternSource(fmt.Sprintf("blobs/%05d.bin", i), "application/octet-stream", i, size))
	}
	in := `{"type":"object","properties":{"text":{"type":"string","maxLength":` + strconv.FormatUint(100*version, 10) + `}}}`
	d.Artifacts = append(d.Artifacts,
		bundle.BytesSource("capabilities/org.example.scale.op/1.0.0/input.schema.json", bundle.MediaTypeSchema, []byte(in)),
		bundle.BytesSource("capabilities/org.example.scale.op/1.0.0/output.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: "org.example.scale.op", Version: v,
		InputSchema:  capability.SchemaRef{ArtifactKey: "capabilities/org.example.scale.op/1.0.0/input.schema.json"},
		OutputSchema: capability.SchemaRef{ArtifactKey: "capabilities/org.example.scale.op/1.0.0/output.schema.json"}}}
	return d
}

// scaleFiles writes version 1 (the base), version 2 (full) and the delta
// from 1 to 2 into dir and returns their paths.
func scaleFiles(tb testing.TB, dir string, n, size int) (base, full, delta string) {
	tb.Helper()
	k := sampleKey(tb, "example-publisher")
	write := func(name string, w func(io.Writer) error) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			tb.Fatal(err)
		}
		if err := w(f); err != nil {
			tb.Fatal(err)
		}
		if err := f.Close(); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	keys := []ed25519.PrivateKey{k}
	base = write("v1.ampb", func(w io.Writer) error {
		_, err := bundle.Write(w, scaleDraft(1, n, size), keys, bundle.WriteOptions{})
		return err
	})
	full = write("v2.ampb", func(w io.Writer) error {
		_, err := bundle.Write(w, scaleDraft(2, n, size), keys, bundle.WriteOptions{})
		return err
	})
	f, err := os.Open(base)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := bundle.Inspect(f, 0)
	f.Close()
	if err != nil {
		tb.Fatal(err)
	}
	delta = write("v2.delta.ampb", func(w io.Writer) error {
		_, _, err := bundle.WriteDelta(w, scaleDraft(2, n, size), keys, in.SignedManifest, bundle.WriteOptions{})
		return err
	})
	return base, full, delta
}

func importFile(tb testing.TB, s *Store, path string, opts ImportOptions) (*ImportResult, error) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	return s.Import(context.Background(), f, opts)
}

func fileSize(tb testing.TB, p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// TestDeltaOfOneChangedSchemaUnderOnePercent: of a bundle whose only
// change is one schema, the delta is under 1 % of the full size; imported
// over its base it exports byte-identical to the full bundle. The CI size
// is 16 MiB; AMPBUNDLE_LONG=1 runs the 1 GiB case (README, long runs).
func TestDeltaOfOneChangedSchemaUnderOnePercent(t *testing.T) {
	n, size := 64, 256<<10 // 16 MiB
	if os.Getenv("AMPBUNDLE_LONG") != "" {
		n, size = 1024, 1<<20 // 1 GiB
	}
	dir := t.TempDir()
	base, full, delta := scaleFiles(t, dir, n, size)
	fs, ds := fileSize(t, full), fileSize(t, delta)
	t.Logf("full %d bytes, delta %d bytes (%.4f %%)", fs, ds, 100*float64(ds)/float64(fs))
	if ds*100 >= fs {
		t.Fatalf("delta is %d bytes, not under 1 %% of the full %d", ds, fs)
	}
	s := newStore(t)
	if _, err := importFile(t, s, base, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := importFile(t, s, delta, ImportOptions{SkipBaseRehash: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Delta == nil || res.Delta.FromBase != n+1 || res.NewBlobs != 1 {
		t.Fatalf("delta import: %+v %+v", res, res.Delta)
	}
	// Export streams into a hash: the full file is compared by SHA-256.
	want, got := sha256.New(), sha256.New()
	f, _ := os.Open(full)
	io.Copy(want, f)
	f.Close()
	if err := s.Export("org.example.scale", got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.Sum(nil), got.Sum(nil)) {
		t.Fatal("export after the delta import differs from the full bundle")
	}
}

// BenchmarkImportDelta imports the delta of one changed schema over a base
// of 256 artifacts of 256 KiB (64 MiB) and of 1 MiB (256 MiB): the same
// delta, the same artifact count, four times the base bytes. Without
// re-hashing the base's blobs the time must not grow with the base bytes;
// with re-hashing (the default) it does. Compare with BenchmarkHashDelta
// (SHA-256 of the delta file), BenchmarkHashFull and BenchmarkImportTiny
// (the fixed cost of any import: transactions, fsync) in the same run
// (docs/PERFORMANCE.md).
func BenchmarkImportDelta(b *testing.B) {
	for _, c := range []struct {
		name   string
		size   int
		rehash bool
	}{{"base=64MiB/rehash=false", 256 << 10, false}, {"base=256MiB/rehash=false", 1 << 20, false}, {"base=64MiB/rehash=true", 256 << 10, true}} {
		b.Run(c.name, func(b *testing.B) {
			base, _, delta := scaleFiles(b, b.TempDir(), 256, c.size)
			b.SetBytes(fileSize(b, delta))
			for b.Loop() {
				b.StopTimer()
				s := newStore(b)
				if _, err := importFile(b, s, base, ImportOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := importFile(b, s, delta, ImportOptions{SkipBaseRehash: !c.rehash}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkImportTiny imports a bundle of one 4 KiB artifact and a
// capability into a store that already holds a 64 MiB bundle: the fixed
// cost of an import (verification of the manifest, the staging and final
// transactions with their fsyncs).
func BenchmarkImportTiny(b *testing.B) {
	dir := b.TempDir()
	base, _, _ := scaleFiles(b, dir, 256, 256<<10)
	tiny := filepath.Join(dir, "tiny.ampb")
	f, err := os.Create(tiny)
	if err != nil {
		b.Fatal(err)
	}
	d := scaleDraft(1, 1, 4096)
	d.BundleID = "org.example.tiny"
	d.Capabilities[0].Name = "org.example.tiny.op"
	if _, err := bundle.Write(f, d, []ed25519.PrivateKey{sampleKey(b, "example-publisher")}, bundle.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for b.Loop() {
		b.StopTimer()
		s := newStore(b)
		if _, err := importFile(b, s, base, ImportOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := importFile(b, s, tiny, ImportOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchHashFile(b *testing.B, pick func(base, full, delta string) string) {
	dir := b.TempDir()
	base, full, delta := scaleFiles(b, dir, 256, 256<<10)
	p := pick(base, full, delta)
	b.SetBytes(fileSize(b, p))
	for b.Loop() {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, f)
		f.Close()
	}
}

// BenchmarkHashDelta: SHA-256 of the delta file, the primitive a delta
// import is measured against.
func BenchmarkHashDelta(b *testing.B) {
	benchHashFile(b, func(_, _, d string) string { return d })
}

// BenchmarkHashFull: SHA-256 of the full file (what re-hashing the base
// costs).
func BenchmarkHashFull(b *testing.B) {
	benchHashFile(b, func(_, f, _ string) string { return f })
}
