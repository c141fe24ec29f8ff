package bundlebuild

import (
	"crypto/ed25519"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
)

// limitBuildOptions are the options of the builds of the memory limit
// tests: LimitMemory on, workers workers, progress told each step.
func limitBuildOptions(workers int, progress func(string, int64, int64)) SourceOptions {
	k := testKey(1)
	return SourceOptions{CreatedAt: sampleCreated, Signer: k.Public().(ed25519.PublicKey), Workers: workers,
		LimitMemory: true, Progress: progress}
}

// setMemoryLimitForTest sets the process's soft memory limit to limit
// for the test and puts back the one in force after it.
func setMemoryLimitForTest(t *testing.T, limit int64) {
	prev := debug.SetMemoryLimit(limit)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
}

// TestConcurrentBuildsUndoEachOthersMemoryLimit: the soft memory limit is
// the process's, and each build with LimitMemory kept the limit it found
// and put it back when it returned. An embedder running two builds at once
// (a library caller: a build service, a test harness) had the second
// build lower the limit under the first's target while both ran (the
// first's collector then ran against a limit below what it holds), the
// first's return put back the limit from before both while the second
// still checked its schemas (its bound undone), and the second's return
// put back the first's target, which the process kept for ever after both
// (threat: a long-running embedder left collecting against a build's
// target, or building without the bound it asked for). Expected: while
// builds overlap the limit is the sum of what each holds alone (never
// under either's), once one ends it is what the other holds alone, and
// after the last ends it is the limit from before the first began.
func TestConcurrentBuildsUndoEachOthersMemoryLimit(t *testing.T) {
	const before = 1 << 40
	setMemoryLimitForTest(t, before)
	src := filepath.Join("..", "testdata", "bundles", "translate")
	dirA, dirB := copyTree(t, src), copyTree(t, src)
	const workersA, workersB = 8, 1 // different targets
	alone := func(dir string, workers int) int64 {
		var seen int64
		if _, err := LoadSource(dir, limitBuildOptions(workers, func(string, int64, int64) {
			seen = debug.SetMemoryLimit(-1)
		})); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	limitA, limitB := alone(dirA, workersA), alone(dirB, workersB)
	if limitA == limitB || limitA >= before || limitB >= before || limitA <= 0 || limitB <= 0 {
		t.Fatalf("precondition: builds alone hold the limits %d and %d, want two different limits under %d", limitA, limitB, before)
	}

	aIn, bIn, aDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var onceA, onceB sync.Once
	enterA := func() { close(aIn); <-bIn }             // A checks until B checks too
	enterB := func(read func()) { read(); close(bIn) } // B checks beside A
	var both, afterA int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(aDone)
		_, err := LoadSource(dirA, limitBuildOptions(workersA, func(string, int64, int64) { onceA.Do(enterA) }))
		onceA.Do(enterA) // a build that never reported progress keeps nothing waiting
		if err != nil {
			t.Errorf("build A: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		<-aIn
		_, err := LoadSource(dirB, limitBuildOptions(workersB, func(string, int64, int64) {
			onceB.Do(func() {
				enterB(func() { both = debug.SetMemoryLimit(-1) })
				<-aDone // A has returned; B still checks
				afterA = debug.SetMemoryLimit(-1)
			})
		}))
		onceB.Do(func() { enterB(func() {}) })
		if err != nil {
			t.Errorf("build B: %v", err)
		}
	}()
	wg.Wait()
	after := debug.SetMemoryLimit(-1)

	if want := min(limitA+limitB, before); both != want {
		t.Errorf("while two builds checked (alone they hold %d and %d) the soft memory limit was %d, want their sum %d: one build lowered it under what the other holds",
			limitA, limitB, both, want)
	}
	if afterA != limitB {
		t.Errorf("once the first build returned, the second (alone it holds %d) checked under the soft memory limit %d: the first build's return undid the second's limit",
			limitB, afterA)
	}
	if after != before {
		t.Errorf("after both builds the soft memory limit is %d, %d before: a build's target outlived it", after, before)
	}
}

// TestMemoryLimitSetDuringBuildIsOverwritten: a build with LimitMemory
// put back, when it returned, the soft memory limit it found when it
// began, overwriting a limit the embedding process set while it ran (its
// own memory policy, changed from another goroutine or from the build's
// progress callback) (threat: an embedder's limit silently lost, the
// process left collecting against a limit it no longer wants). Expected:
// a limit set by anyone else during the build is the limit in force from
// then on (the build never sets one above it) and stays in force after
// the build.
func TestMemoryLimitSetDuringBuildIsOverwritten(t *testing.T) {
	const before, embedders = 1 << 40, 1 << 39
	setMemoryLimitForTest(t, before)
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	var once sync.Once
	var over []int64
	_, err := LoadSource(dir, limitBuildOptions(2, func(string, int64, int64) {
		once.Do(func() { debug.SetMemoryLimit(embedders) })
		if limit := debug.SetMemoryLimit(-1); limit > embedders {
			over = append(over, limit)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(over) > 0 {
		t.Errorf("after the embedder set the soft memory limit to %d during the build, the build set it to %v", int64(embedders), over)
	}
	if after := debug.SetMemoryLimit(-1); after != embedders {
		t.Fatalf("the embedder set the soft memory limit to %d during the build; after it the limit is %d (%d before the build)",
			int64(embedders), after, int64(before))
	}
}
