package bundlebuild

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestSchemaParseTreeOutgrowsBudget: anyone who can write in the source
// folder adds schemas of small values — here {"enum":[[],[],…]}, 4 MiB
// each, within every compile limit (arrays are not objects). The
// in-flight budget once counted schema bytes at 8 bytes of heap each,
// while encoding/json's tree of such a schema holds about 25 bytes of
// heap per byte ({"type":"string"} repeated, an ordinary dense schema,
// about 27; {"":0}, about 60): with 8 workers the budget (20 MiB) let
// five such schemas, over 500 MiB of trees, in flight against a target
// of 192 MiB (64 MiB + 4 × the largest × workers), and the command's
// soft memory limit only made the collector thrash.
// Expected: each schema is charged a bound of its tree once its bytes are
// read (schemaHeapBound), so the heap the schemas in flight add stays
// within the budget, whatever the workers: measured as the peak of
// HeapAlloc sampled during the build, above the heap before it, held to
// the command's memory target (HeapAlloc also counts garbage not yet
// collected, which the budget does not: on a loaded machine the peak
// passed the 143 MiB budget by 7 MiB with the trees within it). Fails on
// a budget that counts bytes (342 MiB).
func TestSchemaParseTreeOutgrowsBudget(t *testing.T) {
	if testalloc.Race {
		t.Skip("measures the heap")
	}
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	flood := repeatSchema(`{"enum":[`, `[]`, `,`, `]}`, 4<<20, 1<<30)
	for i := range 5 {
		write(t, dir, fmt.Sprintf("schemas/flood/arrays%d.json", i), strings.Replace(flood, "[]", fmt.Sprintf("[%d]", i), 1))
	}
	const workers = 8
	budget, target := inFlightBudget(workers, int64(len(flood))+1)
	k := testKey(1)
	var err error
	grew := heapPeak(func() {
		_, err = LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey),
			Workers: workers, LimitMemory: true})
	})
	if err != nil {
		t.Fatalf("the flood of buildable schemas was refused: %v", err)
	}
	if grew > target {
		t.Fatalf("five %.1f MiB schemas of empty arrays on %d workers raised the heap by %d MiB while they were checked; the budget is %d MiB, the target %d MiB",
			float64(len(flood))/(1<<20), workers, grew>>20, budget>>20, target>>20)
	}
}
