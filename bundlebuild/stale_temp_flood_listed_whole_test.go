package bundlebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// fill makes n empty files named prefix and a number in dir.
func fill(t *testing.T, dir, prefix string, n int) {
	t.Helper()
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s%05d", prefix, i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// listingCost is what reading each of dirs whole allocates, as the
// clean-up did it (os.ReadDir).
func listingCost(t *testing.T, dirs ...string) uint64 {
	t.Helper()
	return testalloc.Least(func() {
		for _, d := range dirs {
			if _, err := os.ReadDir(d); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestPlantedLeftoverFolderOfManyFilesIsListedWhole: the attack
// (docs/SPEC-DECISIONS.md BUILD-13): a local user plants, in the folder
// every stdio run cleans ($TMPDIR for -o - and import -), a folder named
// like a killed split's stage (".ampbundle-split-1.tmp", an old mtime)
// holding a flood of plain files they own. RemoveStaleTemps read it whole
// (os.ReadDir(-1)) before trying one removal, on every run: 200,000 files
// cost 32 MiB and 75 ms a run, in proportion beyond (as another user,
// whose removals fail, the folder stays for the next run). A split's
// stage holds at most bundle.MaxParts parts and the index, so a folder
// holding more is not ours: it is now listed a batch at a time and left
// once it has more entries than that (here lowered to 100), costing under
// a quarter of the listing; a stage of the bound is still removed.
func TestPlantedLeftoverFolderOfManyFilesIsListedWhole(t *testing.T) {
	budget := entryBudget{left: MaxStaleScanEntries, stage: 100}
	shared := t.TempDir() // stands for $TMPDIR
	now := time.Now()
	planted := filepath.Join(shared, ".ampbundle-split-1.tmp")
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	const flood = 10_000
	fill(t, planted, "f", flood)
	aged(t, planted, now)
	listing := listingCost(t, planted)

	var removed []string // by any run
	cost := testalloc.Least(func() { removed = append(removed, removeStaleTemps(shared, now, budget)...) })
	if len(removed) != 0 {
		t.Errorf("a folder of %d files, more than a split's stage holds, was removed as a leftover: %v", flood, removed)
	}
	if entries, err := os.ReadDir(planted); err != nil || len(entries) != flood {
		t.Errorf("the planted folder now holds %d entries (%v), want its %d left alone", len(entries), err, flood)
	}
	if cost > listing/4 {
		t.Fatalf("cleaning a folder holding a planted leftover of %d files allocated %d bytes; listing it whole costs %d: it was read whole", flood, cost, listing)
	}
	t.Logf("clean-up allocated %d bytes (listing the planted folder whole: %d)", cost, listing)

	// A stage of exactly the bound is a leftover of ours and goes.
	stage := filepath.Join(shared, ".ampbundle-split-2.tmp")
	if err := os.Mkdir(stage, 0o700); err != nil {
		t.Fatal(err)
	}
	fill(t, stage, "b.ampb.part", budget.stage)
	aged(t, stage, now)
	if removed := removeStaleTemps(shared, now, budget); !slices.Equal(removed, []string{stage}) {
		t.Fatalf("removed %v, want the stage of %d entries %s", removed, budget.stage, stage)
	}
}

// TestFloodedTempFolderIsListedWholeOnEveryRun: the same user floods the
// shared folder itself (BUILD-13): with entries of any name, or with
// leftover folders each within a stage's bound. RemoveStaleTemps read the
// folder whole and every planted folder whole, on every run, however
// many: 200,000 entries of $TMPDIR cost 32 MiB and 280 ms a run. Now the
// entries listed by one clean-up, the folder's and its leftover folders'
// together, are at most MaxStaleScanEntries (here lowered to 300): past
// them it stops, under a quarter of the listing; with the bound above the
// entries every leftover goes as before.
func TestFloodedTempFolderIsListedWholeOnEveryRun(t *testing.T) {
	for _, tc := range []struct {
		name           string
		files, folders int // entries of the shared folder; leftover folders of 99 files
	}{
		{"entries of other names", 10_000, 0},
		{"leftover folders within a stage's bound", 0, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := t.TempDir()
			now := time.Now()
			fill(t, shared, "x", tc.files)
			dirs := []string{shared}
			for i := range tc.folders {
				p := filepath.Join(shared, fmt.Sprintf(".ampbundle-split-%d.tmp", i+1))
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
				fill(t, p, "b.ampb.part", 99)
				aged(t, p, now)
				dirs = append(dirs, p)
			}
			ours := filepath.Join(shared, ".ampbundle-join-1.tmp")
			if err := os.WriteFile(ours, []byte("left by a killed run"), 0o600); err != nil {
				t.Fatal(err)
			}
			aged(t, ours, now)
			listing := listingCost(t, dirs...)

			budget := entryBudget{left: 300, stage: maxStageEntries}
			// One run: the first may remove the leftover of ours, so the
			// runs after it would not do the same work.
			cost := testalloc.Bytes(func() { removeStaleTemps(shared, now, budget) })
			if cost > listing/4 {
				t.Fatalf("a clean-up bounded at %d entries allocated %d bytes; listing the %d folders whole costs %d: they were read whole", budget.left, cost, len(dirs), listing)
			}
			t.Logf("clean-up allocated %d bytes (listing whole: %d)", cost, listing)

			// Above the entries, every leftover goes.
			budget.left = tc.files + 100*tc.folders + 1
			removeStaleTemps(shared, now, budget)
			entries, err := os.ReadDir(shared)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != tc.files {
				t.Fatalf("%d entries left, want the %d files of other names: a leftover within the bound stayed", len(entries), tc.files)
			}
		})
	}
}
