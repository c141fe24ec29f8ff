package resolver

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// BenchmarkImport64MiB imports a 64 MiB bundle (256 artifacts of 256 KiB)
// into a fresh store, fsync'd. Compare with BenchmarkImportBaseline, the
// same bytes hashed and copied once to an fsync'd file (target, docs/PERFORMANCE.md: <= 2x).
func BenchmarkImport64MiB(b *testing.B) {
	data := largeBundle(b, 256, 256<<10)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		s, err := Open(filepath.Join(dir, "s.db"), Options{Now: func() time.Time { return testNow }, Create: true})
		if err != nil {
			b.Fatal(err)
		}
		s.TrustAdd("example", pub(sampleKey(b, "example-publisher")), []string{"org.example"})
		b.StartTimer()
		if _, err := importBytes(b, s, data, ImportOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkImportBaseline: SHA-256 over the bundle plus one sequential,
// fsync'd copy of it: the floor an import is measured against.
func BenchmarkImportBaseline(b *testing.B) {
	data := largeBundle(b, 256, 256<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		b.StopTimer()
		p := filepath.Join(b.TempDir(), "copy")
		b.StartTimer()
		sum := sha256.Sum256(data)
		_ = sum
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		f.Sync()
		f.Close()
	}
}

func benchStore(b *testing.B) (*Store, capability.SchemaRef) {
	s := newStore(b)
	mustImport(b, s, sampleBytes(b, "translate"))
	return s, descriptor(b, s, "org.example.translate.text:2.1.0").InputSchema
}

// BenchmarkSchemaWarm: a cached, verified, compiled schema (target, docs/PERFORMANCE.md:
// <= 1 µs).
func BenchmarkSchemaWarm(b *testing.B) {
	s, ref := benchStore(b)
	if _, err := s.Schema(ref); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Schema(ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchemaWarmParallel: the same from many goroutines.
func BenchmarkSchemaWarmParallel(b *testing.B) {
	s, ref := benchStore(b)
	s.Schema(ref)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Schema(ref); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSchemaCold: resolve + verify + compile (three artifacts), as
// after a generation change that invalidated the entry.
func BenchmarkSchemaCold(b *testing.B) {
	s, ref := benchStore(b)
	b.ReportAllocs()
	for b.Loop() {
		s.schemas = newSchemaCache()
		if _, err := s.Schema(ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve: look up + re-hash one schema's bytes.
func BenchmarkResolve(b *testing.B) {
	s, ref := benchStore(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Resolve(ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveUnderFreshnessPolicy is BenchmarkResolve for a line with
// a kept heartbeat and a freshness policy: every use re-checks that the
// heartbeat's signers still vouch for the installed bundle (its manifest
// and the trust policy are read again), docs/FORMAT.md §23.
func BenchmarkResolveUnderFreshnessPolicy(b *testing.B) {
	s, ref := benchStore(b)
	if err := s.SetFreshness("*", 5); err != nil {
		b.Fatal(err)
	}
	hb, err := bundle.SignHeartbeat(&bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: "org.example.translate", Version: 2,
		CreatedAt: testNow.Format(time.RFC3339)}, []ed25519.PrivateKey{sampleKey(b, "example-publisher")})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.ApplyHeartbeat(hb); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Resolve(ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImportPeakHeap reports the peak live heap while importing
// bundles of 32 and 128 MiB (artifacts of 1 MiB): it should stay flat in the
// bundle size, bounded by the largest artifact and the staging batch
// (docs/PERFORMANCE.md).
func BenchmarkImportPeakHeap(b *testing.B) {
	for _, n := range []int{32, 128} {
		b.Run(fmt.Sprintf("%dMiB", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "large.ampb")
			if err := os.WriteFile(path, largeBundle(b, n, 1<<20), 0o644); err != nil {
				b.Fatal(err)
			}
			var peak uint64
			for b.Loop() {
				b.StopTimer()
				s, err := Open(filepath.Join(b.TempDir(), "s.db"), Options{Now: func() time.Time { return testNow }, Create: true})
				if err != nil {
					b.Fatal(err)
				}
				s.TrustAdd("example", pub(sampleKey(b, "example-publisher")), []string{"org.example"})
				f, _ := os.Open(path)
				runtime.GC()
				stop := make(chan struct{})
				done := make(chan uint64)
				go func() {
					var max uint64
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapInuse > max {
							max = ms.HeapInuse
						}
						select {
						case <-stop:
							done <- max
							return
						case <-time.After(2 * time.Millisecond):
						}
					}
				}()
				b.StartTimer()
				if _, err := s.Import(context.Background(), f, ImportOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				close(stop)
				if m := <-done; m > peak {
					peak = m
				}
				f.Close()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}
