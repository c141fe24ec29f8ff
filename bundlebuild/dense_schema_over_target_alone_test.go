package bundlebuild

import (
	"crypto/ed25519"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestDenseSchemaOverTargetStarvesCollector: a 4 MiB schema of empty
// arrays ({"enum":[[],[],…]}) is within every compile limit, so it
// builds, but its parse tree alone (about 114 MiB of heap, charged 225
// MiB) is over the whole in-flight budget of 8 workers (144 MiB of a 192
// MiB target): no cap short of refusing buildable schemas keeps such a
// build within the P8 target. The budget admits it alone (BUILD-2), yet
// the command's soft memory limit stayed at the target, below what that
// one schema must hold, so the collector ran without rest for as long as
// it was checked. Expected: while an item charged more than the budget
// runs, nothing else is charged beside it, and the soft limit is raised
// by what it is charged beyond the budget (never above the limit in force
// before); once the schemas are checked the limit in force before is back.
func TestDenseSchemaOverTargetStarvesCollector(t *testing.T) {
	if testalloc.Race {
		t.Skip("builds a 4 MiB schema of a million arrays")
	}
	dir := writeVariedSource(t)
	dense := repeatSchema(`{"enum":[`, `[]`, `,`, `]}`, 4<<20, 1<<30)
	write(t, dir, "schemas/flood/dense.json", dense)
	charge := schemaHeapBound([]byte(dense))
	const workers = 8
	budget, target := inFlightBudget(workers, int64(len(dense)))
	if charge <= budget {
		t.Fatalf("precondition: the dense schema is charged %d, within the budget %d", charge, budget)
	}
	prev := debug.SetMemoryLimit(-1)
	var mu sync.Mutex
	alone := 0
	hooks := buildHooks{inFlight: func(used, b int64) {
		mu.Lock()
		defer mu.Unlock()
		limit := debug.SetMemoryLimit(-1)
		want := min(target-memNotHeap+max(used-b, 0), prev)
		if used > b {
			alone++
			if used > charge {
				t.Errorf("%d bytes charged while the dense schema, charged %d, runs alone", used, charge)
			}
		}
		if limit != want {
			t.Errorf("%d bytes charged (budget %d): soft memory limit %d, want %d", used, b, limit, want)
		}
	}}
	k := testKey(1)
	_, err := loadSource(dir, SourceOptions{CreatedAt: sampleCreated, Signer: k.Public().(ed25519.PublicKey),
		Workers: workers, LimitMemory: true}, hooks)
	if err != nil {
		t.Fatalf("a dense schema within the compile limits was refused: %v", err)
	}
	if alone == 0 {
		t.Fatal("the dense schema was never charged beyond the budget")
	}
	if after := debug.SetMemoryLimit(-1); after != prev {
		t.Fatalf("soft memory limit %d after the build, %d before", after, prev)
	}
}
