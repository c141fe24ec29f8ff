package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// workerCounts are the pool sizes every parallel-build test compares.
var workerCounts = []int{1, 2, 7, 16}

// writeVariedSource writes, over the translate sample, schemas of many
// sizes and shapes: $refs by $id and by relative path, JSON pointers,
// anchors, schemas the quick check leaves to the library ($dynamicRef),
// and schemas of a few bytes up to about 16 KiB, in nested folders.
func writeVariedSource(t *testing.T) string {
	t.Helper()
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	write(t, dir, "schemas/gen/base.json", `{"$id":"https://schemas.example.org/gen/base.json","$defs":{"name":{"type":"string","maxLength":64},"n":{"$anchor":"count","type":"integer","minimum":0}}}`)
	write(t, dir, "schemas/gen/dynamic.json", `{"$id":"https://schemas.example.org/gen/dynamic.json","$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}`)
	for i := range 40 {
		var b strings.Builder
		fmt.Fprintf(&b, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{`)
		for j := range (i * i * 7) % 160 {
			fmt.Fprintf(&b, `"p%d":{"type":"string","pattern":"^[a-z]{%d}$","description":"property %d of %d"},`, j, j%9+1, j, i)
		}
		switch i % 4 {
		case 0:
			b.WriteString(`"name":{"$ref":"https://schemas.example.org/gen/base.json#/$defs/name"}`)
		case 1:
			b.WriteString(`"n":{"$ref":"../base.json#count"}`)
		case 2:
			b.WriteString(`"tree":{"$ref":"../dynamic.json"}`)
		default:
			b.WriteString(`"x":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"boolean"}`)
		}
		b.WriteString(`}}`)
		write(t, dir, fmt.Sprintf("schemas/gen/%c/s%02d.json", 'a'+i%3, i), b.String())
	}
	return dir
}

// buildWith builds dir with the given workers and hooks, and returns the
// bundle's bytes.
func buildWith(t *testing.T, dir string, workers int, full bool, hooks buildHooks) ([]byte, error) {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	d, err := loadSource(dir, SourceOptions{CreatedAt: sampleCreated, Signer: k.Public().(ed25519.PublicKey),
		Workers: workers, FullSchemaCheck: full}, hooks)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), nil
}

// TestBuildWorkerCountCannotChangeBundleBytes: a publisher's bundle is
// the same bytes whatever the machine's cores. The committed sample
// bundles rebuild byte for byte with every worker count, and a varied
// source (references across files, schemas compiled by the library,
// sizes from bytes to 16 KiB) gives the 1-worker bytes with 2, 7
// and 16 workers, with the quick check and with --full-schema-check.
func TestBuildWorkerCountCannotChangeBundleBytes(t *testing.T) {
	for _, w := range workerCounts {
		for _, s := range samples {
			k := sampleKey(t, s.key)
			d, err := LoadSource(filepath.Join("..", "testdata", "bundles", s.name),
				SourceOptions{CreatedAt: sampleCreated, Signer: k.Public().(ed25519.PublicKey), Workers: w})
			if err != nil {
				t.Fatalf("%s, %d workers: %v", s.name, w, err)
			}
			var got bytes.Buffer
			if _, err := bundle.Write(&got, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", s.name+".ampb"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%s with %d workers differs from the committed bundle", s.name, w)
			}
		}
	}
	dir := writeVariedSource(t)
	for _, full := range []bool{false, true} {
		want, err := buildWith(t, dir, 1, full, buildHooks{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range workerCounts[1:] {
			got, err := buildWith(t, dir, w, full, buildHooks{})
			if err != nil {
				t.Fatalf("%d workers (full %v): %v", w, full, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d workers (full %v): %d bytes differ from the 1-worker build", w, full, len(got))
			}
		}
	}
}

// TestBuildFirstErrorDoesNotDependOnWorkerCount: with several bad schemas
// in a source, every worker count reports the same error, that of the
// lowest-sorted bad file, whichever worker finished first — in the first
// read (not JSON) and in the reference checks (a $ref to nothing, a
// pattern that does not compile, compiled by the library or not).
func TestBuildFirstErrorDoesNotDependOnWorkerCount(t *testing.T) {
	tests := []struct {
		name  string
		bad   map[string]string
		first string // the file the error must name
	}{
		{"not json", map[string]string{
			"schemas/gen/b/s31.json": `{"type":`, "schemas/gen/c/s05.json": `[1,`, "schemas/gen/a/s39.json": `nope`,
		}, "schemas/gen/a/s39.json"},
		{"unresolved refs", map[string]string{
			"schemas/gen/c/s02.json": `{"$ref":"missing.json"}`, "schemas/gen/b/s07.json": `{"$ref":"https://example.org/x.json"}`,
			"schemas/gen/c/s08.json": `{"$dynamicAnchor":"a","$ref":"nothing.json"}`,
		}, "schemas/gen/b/s07.json"},
		{"bad pattern after a compiled schema", map[string]string{
			"schemas/gen/c/s38.json": `{"pattern":"("}`, "schemas/gen/c/s35.json": `{"$dynamicAnchor":"a","pattern":"(["}`,
		}, "schemas/gen/c/s35.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeVariedSource(t)
			for rel, content := range tt.bad {
				write(t, dir, rel, content)
			}
			var want string
			for _, full := range []bool{false, true} {
				for _, w := range workerCounts {
					_, err := buildWith(t, dir, w, full, buildHooks{})
					if !errors.Is(err, bundle.ErrSource) {
						t.Fatalf("%d workers: got %v, want %s", w, err, bundle.ErrSource)
					}
					msg := amp.AsError(err).Message
					if !strings.HasPrefix(msg, tt.first+": ") {
						t.Fatalf("%d workers (full %v): %q does not name the lowest-sorted bad file %s", w, full, msg, tt.first)
					}
					if want == "" {
						want = err.Error()
					} else if err.Error() != want {
						t.Fatalf("%d workers: %q, 1 worker: %q", w, err, want)
					}
				}
				want = ""
			}
		})
	}
}

// TestBuildHoldsSchemaBytesInFlightWithinBudget: a source of large
// schemas cannot make a build charge more heap at once than its budget
// (the target less memBase and memNotHeap by default), in either phase:
// beyond it only one schema, charged more than the whole budget, runs
// alone.
func TestBuildHoldsSchemaBytesInFlightWithinBudget(t *testing.T) {
	dir := writeVariedSource(t)
	var largest, oneCharge int64
	err := filepath.WalkDir(filepath.Join(dir, "schemas"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			largest = max(largest, int64(len(data)))
			oneCharge = max(oneCharge, int64(len(data))+compileHeapBound(data))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		workers int
		full    bool
		budget  int64 // 0: the default
	}{
		{2, false, 0},
		{7, true, 0},
		{16, false, largest}, // tighter than any charge: one schema at a time
		{16, true, oneCharge * 3 / 2},
	} {
		limit, _ := inFlightBudget(tt.workers, largest)
		if tt.budget > 0 {
			limit = tt.budget
		}
		var mu sync.Mutex
		var peak, calls int64
		hooks := buildHooks{budget: tt.budget, inFlight: func(used, budget int64) {
			mu.Lock()
			defer mu.Unlock()
			peak, calls = max(peak, used), calls+1
			if budget != limit {
				t.Errorf("budget %d, want %d", budget, limit)
			}
		}}
		if _, err := buildWith(t, dir, tt.workers, tt.full, hooks); err != nil {
			t.Fatal(err)
		}
		if peak > max(limit, oneCharge) || peak <= 0 || calls == 0 {
			t.Fatalf("%d workers, budget %d: peak %d bytes charged over %d admissions, limit %d, one schema at most %d",
				tt.workers, tt.budget, peak, calls, limit, oneCharge)
		}
	}
}

// runOrdered is runCharged with work that keeps its item's first charge.
func runOrdered[R any](workers, n int, b *byteBudget, cost func(int) int64, work func(int) R, consume func(int, R) error) error {
	return runCharged(workers, n, b, cost, func(i int, _ *charge) R { return work(i) }, consume)
}

// TestOrderedPoolAdmitsNoItemOverBudget: the pool under a build admits an
// item only when its bytes fit with those in flight (an item larger than
// the whole budget runs alone), hands results over in item order, and
// runs nothing once it has returned on an error.
func TestOrderedPoolAdmitsNoItemOverBudget(t *testing.T) {
	costs := []int64{6, 6, 3, 3, 25, 1, 9, 4, 4, 2}
	var running, peak, started atomic.Int64
	b := newByteBudget(10, nil)
	var order []int
	work := func(i int) int {
		started.Add(1)
		now := running.Add(costs[i])
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		for range 1000 {
			_ = fmt.Sprint(i) // give other workers a chance to overlap
		}
		running.Add(-costs[i])
		return i * i
	}
	err := runOrdered(8, len(costs), b, func(i int) int64 { return costs[i] }, work, func(i, r int) error {
		if r != i*i {
			t.Errorf("item %d got result %d", i, r)
		}
		order = append(order, i)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() > 25 || len(order) != len(costs) {
		t.Fatalf("peak %d bytes running, %d results", peak.Load(), len(order))
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("results out of order: %v", order)
		}
	}
	// Without the 25-byte item, nothing may exceed the budget of 10.
	small := []int64{6, 6, 3, 3, 1, 9, 4, 4, 2, 7, 7, 5}
	costs = small
	peak.Store(0)
	if err := runOrdered(8, len(small), newByteBudget(10, nil), func(i int) int64 { return small[i] }, work,
		func(int, int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if peak.Load() > 10 {
		t.Fatalf("peak %d bytes running, budget 10", peak.Load())
	}
	// An error stops the pool: nothing starts after runOrdered returns.
	started.Store(0)
	stop := errors.New("stop")
	err = runOrdered(4, len(small), newByteBudget(10, nil), func(i int) int64 { return small[i] }, work,
		func(i, _ int) error {
			if i == 2 {
				return stop
			}
			return nil
		})
	after := started.Load()
	if !errors.Is(err, stop) || after > int64(len(small)) {
		t.Fatalf("got %v after %d items", err, after)
	}
	for range 1000 {
		_ = fmt.Sprint(0)
	}
	if started.Load() != after {
		t.Fatalf("%d items started after the pool returned", started.Load()-after)
	}
}

// TestBuildBudgetKeepsParseTreesWithinMemoryTarget: however many workers
// and however large the schemas, the heap a build lets the schemas in
// flight be charged fits, with memBase and memNotHeap, in the P8 target
// of 64 MiB + 4 × the largest schema × workers.
func TestBuildBudgetKeepsParseTreesWithinMemoryTarget(t *testing.T) {
	for _, w := range []int{1, 2, 7, 16, 64, 1024} {
		for _, largest := range []int64{0, 1, 4 << 10, 1 << 20, 4 << 20, 16 << 20} {
			budget, target := inFlightBudget(w, largest)
			if want := int64(memTargetBase) + 4*max(largest, 1)*int64(w); target != want {
				t.Fatalf("%d workers, largest %d: target %d, want %d", w, largest, target, want)
			}
			if budget <= 0 || memBase+memNotHeap+budget > target {
				t.Fatalf("%d workers, largest %d: a budget of %d bytes of heap does not fit in %d", w, largest, budget, target)
			}
		}
	}
}
