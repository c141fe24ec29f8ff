package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/capability"
)

// largeDraft has n artifacts of size bytes each (schemas need not be valid
// JSON for the format layer).
func largeDraft(tb testing.TB, n, size int) (*Draft, int64) {
	d := smallDraft(tb)
	blob := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var total int64
	for i := 0; i < n; i++ {
		b := bytes.Clone(blob)
		b[0] = byte(i)
		d.Artifacts = append(d.Artifacts, BytesSource(fmt.Sprintf("blobs/%04d.bin", i), "application/octet-stream", b))
		total += int64(len(b))
	}
	return d, total
}

// BenchmarkVerifyLarge: NewReader + VerifyRest over a 64 MiB bundle (16
// artifacts of 4 MiB), next to SHA-256 over the same bytes in the same run
// (BenchmarkSHA256Large). Target (docs/PERFORMANCE.md): <= 1.15x.
func BenchmarkVerifyLarge(b *testing.B) {
	k := testKey(1)
	d, _ := largeDraft(b, 16, 4<<20)
	data := build(b, d, k)
	p := trust(k, "*")
	now := func() time.Time { return testNow }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{Policy: p, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.VerifyRest(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadLarge: the same with Next, which keeps each artifact in
// memory (what an import does).
func BenchmarkReadLarge(b *testing.B) {
	k := testKey(1)
	d, _ := largeDraft(b, 16, 4<<20)
	data := build(b, d, k)
	p := trust(k, "*")
	now := func() time.Time { return testNow }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{Policy: p, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSHA256Large is the primitive: SHA-256 of the same 64 MiB.
func BenchmarkSHA256Large(b *testing.B) {
	k := testKey(1)
	d, _ := largeDraft(b, 16, 4<<20)
	data := build(b, d, k)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h := sha256.New()
		h.Write(data)
		h.Sum(nil)
	}
}

// BenchmarkBuildLarge: Write of the same bundle (two hashing passes, one
// copy), next to SHA-256.
func BenchmarkBuildLarge(b *testing.B) {
	k := testKey(1)
	d, total := largeDraft(b, 16, 4<<20)
	d.HashAlg = capability.HashSHA256
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Write(io.Discard, d, []ed25519.PrivateKey{k}, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// largeFile writes the 64 MiB bundle to a temporary file.
func largeFile(b *testing.B) (string, *Policy) {
	k := testKey(1)
	d, _ := largeDraft(b, 16, 4<<20)
	path := b.TempDir() + "/large.ampb"
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Write(f, d, []ed25519.PrivateKey{k}, WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path, trust(k, "*")
}

// BenchmarkVerifyLargeFile: what `ampbundle verify` does, from a file.
func BenchmarkVerifyLargeFile(b *testing.B) {
	path, p := largeFile(b)
	st, _ := os.Stat(path)
	now := func() time.Time { return testNow }
	b.SetBytes(st.Size())
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r, err := NewReader(f, ReaderOptions{Policy: p, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.VerifyRest(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkSHA256LargeFile: SHA-256 over the same file (the docs/PERFORMANCE.md
// baseline for verify).
func BenchmarkSHA256LargeFile(b *testing.B) {
	path, _ := largeFile(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			b.Fatal(err)
		}
		h.Sum(nil)
		f.Close()
	}
}
