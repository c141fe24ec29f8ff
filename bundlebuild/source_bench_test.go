package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// Build of a large source (docs/PERFORMANCE.md, P8): `ampbundle build` of a
// source of many large schemas against its primitives, JSON parsing of
// every schema plus SHA-256 of every file, in the same run. Target: <= 2x.
// The size is AMPBUNDLE_BUILD_MB (default 4) in schemas of
// AMPBUNDLE_BUILD_SCHEMA_KB (default 256: 16 schemas; P8 names 256 MB in 64
// schemas of 4 MiB).

// writeLargeSource writes a source folder of n/2 capabilities, each with an
// input and an output schema of about size bytes: an object schema with
// many string properties, each with a pattern and a description, plus a
// shared schema every input schema $refs.
func writeLargeSource(tb testing.TB, dir string, n, size int) int64 {
	tb.Helper()
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	var total int64
	add := func(rel string, data []byte) {
		write(rel, data)
		total += int64(len(data))
	}
	add("bundle.json", []byte(`{"bundle_id": "org.example.large", "version": 1}`))
	add("schemas/common.json", []byte(`{"$id": "https://schemas.example.org/common.json", "type": "string", "maxLength": 256}`))
	schema := func(i int, ref bool) []byte {
		var b bytes.Buffer
		b.WriteString(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {`)
		for j := 0; b.Len() < size-200; j++ {
			if j > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, `"field_%d_%06d": {"type": "string", "maxLength": 64, "pattern": "^[a-z0-9_]+$", "description": "field %d of schema %d, described at some length so that the schema is large"}`, i, j, j, i)
		}
		if ref {
			b.WriteString(`, "common": {"$ref": "https://schemas.example.org/common.json"}`)
		}
		b.WriteString(`}, "additionalProperties": false}`)
		return b.Bytes()
	}
	for i := 0; i < n/2; i++ {
		c := "capabilities/org.example.large.c" + strconv.Itoa(i) + "/1.0.0/"
		add(c+"capability.json", []byte(`{}`))
		add(c+"input.schema.json", schema(2*i, true))
		add(c+"output.schema.json", schema(2*i+1, false))
	}
	return total
}

// largeSourceSize: AMPBUNDLE_BUILD_MB in total (default 4), in schemas of
// AMPBUNDLE_BUILD_SCHEMA_KB each (default 256), or AMPBUNDLE_BUILD_SCHEMAS
// schemas of that size when it is set. The defaults keep a -benchtime 1x
// pass over every benchmark short; docs/PERFORMANCE.md gives the sizes P8
// is measured at.
func largeSourceSize() (n, size int) {
	mb, kb := 4, 256
	if v, err := strconv.Atoi(os.Getenv("AMPBUNDLE_BUILD_MB")); err == nil && v >= 1 {
		mb = v
	}
	if v, err := strconv.Atoi(os.Getenv("AMPBUNDLE_BUILD_SCHEMA_KB")); err == nil && v >= 16 {
		kb = v
	}
	n = mb * 1024 / kb
	if v, err := strconv.Atoi(os.Getenv("AMPBUNDLE_BUILD_SCHEMAS")); err == nil && v >= 1 {
		n = v
	}
	if n < 2 {
		n = 2
	}
	return n, kb << 10
}

// largeSourceDir is where the benchmarks write their source: a fresh
// temporary folder, or AMPBUNDLE_BUILD_SRC (created, and kept afterwards)
// so that the real command can be timed over the same source.
func largeSourceDir(b *testing.B) string {
	dir := os.Getenv("AMPBUNDLE_BUILD_SRC")
	if dir == "" {
		return b.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// reportCPU, deferred right before the benchmark loop, reports the CPU
// time of the process per operation as "cpu-ns/op" (where it can be
// measured): the P8 ratio is also quoted in CPU time, which a loaded
// machine distorts far less than wall-clock time.
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkBuildSource: LoadSource + Write to a file, as `ampbundle build`.
func BenchmarkBuildSource(b *testing.B) {
	n, size := largeSourceSize()
	src := largeSourceDir(b)
	total := writeLargeSource(b, src, n, size)
	out := filepath.Join(b.TempDir(), "large.ampb")
	k := testKey(1)
	b.SetBytes(total)
	b.ReportAllocs()
	defer reportCPU(b)()
	b.ResetTimer()
	for range b.N { // not b.Loop: see BenchmarkBuildSourceVsFloor
		d, err := LoadSource(src, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey)})
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bundle.Write(f, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkBuildSourcePrimitives: the baseline of BenchmarkBuildSource,
// every file read, SHA-256 of every file, and every schema parsed as JSON
// (encoding/json into any), over the same source.
func BenchmarkBuildSourcePrimitives(b *testing.B) {
	n, size := largeSourceSize()
	src := b.TempDir()
	total := writeLargeSource(b, src, n, size)
	b.SetBytes(total)
	b.ReportAllocs()
	defer reportCPU(b)()
	b.ResetTimer()
	for range b.N { // not b.Loop: see BenchmarkBuildSourceVsFloor
		err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			data, err := io.ReadAll(io.TeeReader(f, h))
			if err != nil {
				return err
			}
			h.Sum(nil)
			var v any
			return json.Unmarshal(data, &v)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
