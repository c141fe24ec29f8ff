package ocitransport_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
	"github.com/ampbundle/ampbundle/ocitransport/ocitest"
)

// benchSize is the bundle size of BenchmarkOCIPushPullVsCraneCopy:
// $AMPBUNDLE_OCI_BENCH_SIZE bytes, 8 MiB by default (docs/PERFORMANCE.md
// gives the 256 MiB command).
func benchSize(b *testing.B) int64 {
	if s := os.Getenv("AMPBUNDLE_OCI_BENCH_SIZE"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1<<20 {
			b.Fatalf("AMPBUNDLE_OCI_BENCH_SIZE=%q: want a byte count of at least 1 MiB", s)
		}
		return n
	}
	return 8 << 20
}

// bigBundle writes a bundle file of size bytes: the sample bundle followed
// by random bytes (push reads only the head's manifest; the registry sees
// one opaque blob either way).
func bigBundle(b *testing.B, size int64) string {
	head, err := os.ReadFile(sampleBundle)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "big.ampb")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(head); err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, size-int64(len(head))); err != nil {
		b.Fatal(err)
	}
	return p
}

func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// BenchmarkOCIPushPullVsCraneCopy: push a bundle file to the real registry
// on loopback and pull it back, against crane copying the same artifact to
// a second registry in the same run. Reports each side's MB/s, our
// throughput as a fraction of crane's (the median over the runs of
// -benchtime Nx; target >= 0.80), and the bytes
// allocated per push and per pull (flat: one buffer whatever the size).
func BenchmarkOCIPushPullVsCraneCopy(b *testing.B) {
	size := benchSize(b)
	reg, reg2 := ocitest.Start(b, ocitest.Config{}), ocitest.Start(b, ocitest.Config{})
	ocitest.Crane(b)
	path := bigBundle(b, size)
	out := filepath.Join(b.TempDir(), "out.ampb")
	ctx := context.Background()
	var push, pull, crane time.Duration
	var pushAlloc, pullAlloc uint64
	var pushRatio, pullRatio []float64 // per run: the machine's load changes between runs
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		repo := fmt.Sprintf("bench/r%d", i) // a fresh repository: nothing deduplicated
		loc, err := ocitransport.ParseLocation("oci://" + reg.Host + "/" + repo + ":t")
		if err != nil {
			b.Fatal(err)
		}
		ep, err := ocitransport.Open(ctx, loc, ocitransport.Options{PlainHTTP: true}, ocitransport.ReadWrite)
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		t0, a0 := time.Now(), allocated()
		a, err := ep.PushBundle(ctx, f, "big.ampb", "t")
		p, pa := time.Since(t0), allocated()-a0
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		t0, a0 = time.Now(), allocated()
		if err := ep.PullFile(ctx, a, out); err != nil {
			b.Fatal(err)
		}
		q, qa := time.Since(t0), allocated()-a0
		t0 = time.Now()
		ocitest.RunCrane(b, "copy", reg.Host+"/"+repo+":t", reg2.Host+"/"+repo+":t")
		c := time.Since(t0)
		ep.Close()
		push, pull, crane, pushAlloc, pullAlloc = push+p, pull+q, crane+c, pushAlloc+pa, pullAlloc+qa
		pushRatio, pullRatio = append(pushRatio, c.Seconds()/p.Seconds()), append(pullRatio, c.Seconds()/q.Seconds())
	}
	b.StopTimer()
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(push), "push-MB/s")
	b.ReportMetric(mbps(pull), "pull-MB/s")
	b.ReportMetric(mbps(crane), "crane-copy-MB/s")
	b.ReportMetric(median(pushRatio), "push/crane")
	b.ReportMetric(median(pullRatio), "pull/crane")
	b.ReportMetric(float64(pushAlloc)/float64(b.N), "push-alloc-B")
	b.ReportMetric(float64(pullAlloc)/float64(b.N), "pull-alloc-B")
}

// median of xs (not empty).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
