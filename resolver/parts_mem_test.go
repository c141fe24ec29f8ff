package resolver

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// partsMemory splits a bundle of n artifacts of 256 KiB into 1 MiB parts
// and reports the bytes allocated by the split and by a verify through the
// parts, and the peak live heap (sampled after a GC at every part
// boundary) of an import through the parts.
func partsMemory(t *testing.T, n int) (split, verify, importPeak uint64) {
	dir := t.TempDir()
	k := sampleKey(t, "example-publisher")
	file := filepath.Join(dir, "b.ampb")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Write(f, scaleDraft(1, n, 256<<10), []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var index string
	var x *bundle.PartIndex
	// One split: it writes the parts, which a second would find there.
	split = testalloc.Bytes(func() {
		if index, x, err = bundlebuild.SplitFile(file, dir, 1<<20, []ed25519.PrivateKey{k}); err != nil {
			t.Fatal(err)
		}
	})
	os.Remove(file) // the whole file is gone: only parts remain
	policy := &bundle.Policy{Keys: []bundle.TrustedKey{{Name: "example", Key: pub(k), Scopes: []string{"org.example"}}}}
	stream := func() *bundlebuild.PartsReader {
		fi, err := os.Open(index)
		if err != nil {
			t.Fatal(err)
		}
		defer fi.Close()
		got, _, err := bundle.ReadPartIndex(fi, policy)
		if err != nil {
			t.Fatal(err)
		}
		paths, err := bundlebuild.LocateParts(got, []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		return bundlebuild.NewPartsReader(got, paths)
	}
	verify = testalloc.Least(func() { // the parts are only read
		pr := stream()
		defer pr.Close()
		r, err := bundle.NewReader(pr, bundle.ReaderOptions{Policy: policy, Now: func() time.Time { return testNow }})
		if err == nil {
			err = r.VerifyRest()
		}
		if err != nil {
			t.Fatal(pr.Explain(err))
		}
	})
	s := newStore(t)
	pr := stream()
	defer pr.Close()
	runtime.GC()
	var ms runtime.MemStats
	pr.OnPart = func(int) {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		importPeak = max(importPeak, ms.HeapAlloc)
	}
	if _, err := s.Import(context.Background(), pr, ImportOptions{}); err != nil {
		t.Fatal(pr.Explain(err))
	}
	if len(x.Parts) < n/4 {
		t.Fatalf("%d parts for %d artifacts of 256 KiB", len(x.Parts), n)
	}
	return split, verify, importPeak
}

// TestPartsMemoryFlatInBundleSize: split, verify through parts and import
// through parts of a 32 MiB bundle need no more memory than those of an
// 8 MiB one, give or take a small fraction of the 24 MiB between them
// (the manifest and the per-artifact records grow with the count).
func TestPartsMemoryFlatInBundleSize(t *testing.T) {
	s1, v1, i1 := partsMemory(t, 32)  // 8 MiB
	s2, v2, i2 := partsMemory(t, 128) // 32 MiB
	t.Logf("allocated by split: %d -> %d; by verify: %d -> %d; import peak live heap: %d -> %d", s1, s2, v1, v2, i1, i2)
	const slack = 2 << 20 // 1/12 of the size difference
	if s2 > s1+slack || v2 > v1+slack || i2 > i1+slack {
		t.Fatalf("memory grows with the bundle: split %d -> %d, verify %d -> %d, import peak %d -> %d", s1, s2, v1, v2, i1, i2)
	}
}
