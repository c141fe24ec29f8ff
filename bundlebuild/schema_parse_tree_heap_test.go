package bundlebuild

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// repeatSchema returns prefix, then item repeated (joined by sep) while
// the document stays under size bytes and at most n items, then suffix.
func repeatSchema(prefix, item, sep, suffix string, size, n int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < n && b.Len()+len(item)+len(sep)+len(suffix) < size; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strings.ReplaceAll(item, "%d", fmt.Sprint(i)))
	}
	b.WriteString(suffix)
	return b.String()
}

// heapPeak runs build and returns how far the heap rose above its level
// before it at its peak (HeapAlloc sampled every 200 µs, the collector's
// garbage included).
func heapPeak(build func()) int64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	}()
	build()
	close(stop)
	wg.Wait()
	return int64(peak) - int64(base.HeapAlloc)
}

// buildHeapPeak builds the translate sample with schema added as
// schemas/flood/s.json on one worker and returns heapPeak of the build,
// and the build's error.
func buildHeapPeak(t *testing.T, schema string, full bool) (grew int64, err error) {
	t.Helper()
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	write(t, dir, "schemas/flood/s.json", schema)
	k := testKey(1)
	grew = heapPeak(func() {
		_, err = LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey),
			Workers: 1, FullSchemaCheck: full})
	})
	return grew, err
}

var heapShapes = []struct {
	name   string
	schema string
}{
	{"empty arrays", repeatSchema(`{"enum":[`, `[]`, `,`, `]}`, 4<<20, 1<<30)},
	{"nested empty arrays", repeatSchema(`{"enum":[`, `[[]]`, `,`, `]}`, 4<<20, 1<<30)},
	{"zeros", repeatSchema(`{"enum":[`, `0`, `,`, `]}`, 4<<20, 1<<30)},
	{"numbers", repeatSchema(`{"enum":[`, `12345.5`, `,`, `]}`, 4<<20, 1<<30)},
	{"short strings", repeatSchema(`{"enum":[`, `"a"`, `,`, `]}`, 4<<20, 1<<30)},
	{"empty objects", repeatSchema(`{"enum":[`, `{}`, `,`, `]}`, 4<<20, 1<<30)},
	{"one-member objects", repeatSchema(`{"enum":[`, `{"":0}`, `,`, `]}`, 4<<20, 1<<30)},
	{"wide object", repeatSchema(`{"enum":[{`, `"%d":0`, `,`, `}]}`, 4<<20, 1<<30)},
	{"type string enum", repeatSchema(`{"enum":[`, `{"type":"string"}`, `,`, `]}`, 4<<20, 1<<30)},
	{"subschemas in anyOf", repeatSchema(`{"anyOf":[`, `{"type":"string"}`, `,`, `]}`, 4<<20, 9990)},
	{"empty subschemas", repeatSchema(`{"anyOf":[`, `{}`, `,`, `]}`, 4<<20, 9990)},
	{"properties", repeatSchema(`{"type":"object","properties":{`, `"p%d":{"type":"string","maxLength":64}`, `,`, `}}`, 4<<20, 9990)},
	{"P8 fields", repeatSchema(`{"type":"object","properties":{`, `"field_%d": {"type": "string", "maxLength": 64, "pattern": "^[a-z0-9_]+$", "description": "field %d of schema 1, described at some length so that the schema is large"}`, ",\n", `}}`, 1<<20, 9990)},
	{"long string", `{"description":"` + strings.Repeat("a", 4<<20-20) + `"}`},
	{"nesting", strings.Repeat(`[`, 120) + strings.Repeat(`]`, 120)},
	// One number strconv rounds slowly (1e-320, jsonnum.StrconvFast) sends
	// the whole document down schemagraph's other Float64 path, which
	// holds every number as text before it rounds it
	// (docs/SPEC-DECISIONS.md JSON-3, JSON-8): 9- to 18-byte numbers took
	// 1.39 to 1.57 times their charge before heapPerTextNumber.
	{"zeros one slow", repeatSchema(`{"enum":[1e-320,`, `0`, `,`, `]}`, 4<<20, 1<<30)},
	{"short numbers one slow", repeatSchema(`{"enum":[1e-320,`, `1.5`, `,`, `]}`, 4<<20, 1<<30)},
	{"numbers one slow", repeatSchema(`{"enum":[1e-320,`, `12345.5`, `,`, `]}`, 4<<20, 1<<30)},
	{"9-byte numbers one slow", repeatSchema(`{"enum":[1e-320,`, `1234567.5`, `,`, `]}`, 4<<20, 1<<30)},
	{"10-byte numbers one slow", repeatSchema(`{"enum":[1e-320,`, `12345678.5`, `,`, `]}`, 4<<20, 1<<30)},
	{"15-byte numbers one slow", repeatSchema(`{"enum":[1e-320,`, `1234567890123.5`, `,`, `]}`, 4<<20, 1<<30)},
	{"17-byte numbers one slow", repeatSchema(`{"enum":[1e-320,`, `12345678901234567`, `,`, `]}`, 4<<20, 1<<30)},
	{"18-byte numbers one slow", repeatSchema(`{"enum":[1e-320,`, `1234567890123456.5`, `,`, `]}`, 4<<20, 1<<30)},
	{"30-digit numbers", repeatSchema(`{"enum":[`, `123456789012345678901234567890`, `,`, `]}`, 4<<20, 1<<30)},
	{"100-digit numbers", repeatSchema(`{"enum":[`, strings.Repeat("1234567890", 10), `,`, `]}`, 4<<20, 1<<30)},
}

// TestSchemaHeapBoundCoversEveryShape: a schema's shape decides what its
// parse tree costs, and an attacker picks the worst. For each shape — the
// dense ones an attacker writes and the ordinary ones of P8 — the heap one
// schema adds while a one-worker build checks it (peak HeapAlloc, with
// the collector's garbage) stays within what it is charged:
// schemaHeapBound for the quick check, compileHeapBound where it is
// compiled (--full-schema-check). This is where the constants of
// heapcharge.go come from; a constant set too low fails here.
func TestSchemaHeapBoundCoversEveryShape(t *testing.T) {
	if testing.Short() || testalloc.Race {
		t.Skip("builds 4 MiB schemas of every shape and measures the heap")
	}
	const slack = 4 << 20 // the rest of the sample, and the sampling
	for _, s := range heapShapes {
		data := []byte(s.schema)
		for _, full := range []bool{false, true} {
			grew, err := buildHeapPeak(t, s.schema, full)
			bound := schemaHeapBound(data)
			if full {
				bound = compileHeapBound(data)
			}
			ratio := float64(grew) / float64(bound)
			t.Logf("%-22s full=%-5v %8d bytes: heap +%4d MiB, charged %4d MiB (%.2f; refused: %v)", s.name, full, len(data), grew>>20, bound>>20, ratio, err != nil)
			if grew > bound+slack {
				t.Errorf("%s (full check %v): a %d-byte schema raised the heap by %d bytes, charged %d", s.name, full, len(data), grew, bound)
			}
		}
	}
}
