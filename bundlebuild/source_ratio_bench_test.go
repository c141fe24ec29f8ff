package bundlebuild

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// BenchmarkBuildSourceVsFloor reports the P8 ratio in one run
// (docs/PERFORMANCE.md, P8): each iteration times the floor — every file
// of the source read, hashed with SHA-256 and, for a schema, parsed with
// encoding/json into any, one file after the other — and then the build
// (LoadSource with GOMAXPROCS workers, the -cpu value, + Write to a file),
// and reports build time / floor time as "x-floor" (targets: ≤ 2 with
// -cpu 2, ≤ 1 with -cpu 16 on 16 cores), the same in CPU time of the
// process as "x-floor-cpu" (what parallel work costs in all, steadier on
// a shared machine), and the workers and processors. The source is
// largeSourceSize's (4 MiB by default: cheap at -benchtime 1x).
func BenchmarkBuildSourceVsFloor(b *testing.B) {
	n, size := largeSourceSize()
	src := largeSourceDir(b)
	total := writeLargeSource(b, src, n, size)
	out := filepath.Join(b.TempDir(), "large.ampb")
	k := testKey(1)
	b.SetBytes(total)
	// A b.N loop, not b.Loop: testing runs a b.Loop benchmark whole
	// before it sets GOMAXPROCS to the -cpu value (Go 1.26).
	workers := buildWorkers(0)
	var floor, build, floorCPU, buildCPU time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cpu0, _ := processCPU()
		if err := buildFloor(src); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		cpu1, _ := processCPU()
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
		cpu2, _ := processCPU()
		floor, build = floor+mid.Sub(start), build+time.Since(mid)
		floorCPU, buildCPU = floorCPU+cpu1-cpu0, buildCPU+cpu2-cpu1
	}
	if floor > 0 {
		b.ReportMetric(float64(build)/float64(floor), "x-floor")
	}
	if floorCPU > 0 {
		b.ReportMetric(float64(buildCPU)/float64(floorCPU), "x-floor-cpu")
	}
	b.ReportMetric(float64(workers), "workers")
	b.ReportMetric(float64(runtime.NumCPU()), "cpus")
}

// buildFloor is one pass of the P8 floor over a source folder, on one
// goroutine: every file read, SHA-256 of every file, and a JSON parse
// (encoding/json into any) of every file.
func buildFloor(src string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
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
}
