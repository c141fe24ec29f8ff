package catalog

import (
	"fmt"
	"testing"
)

// readMany reads a store of one bundle of caps capabilities with the
// pages' options, changed by opt.
func readMany(t *testing.T, caps int, opt func(*ReadOptions)) *Model {
	t.Helper()
	src, err := opener(newStore(t, manyBundle(t, caps)))()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.(interface{ Close() error }).Close() })
	opts := PageReadOptions(now)
	if opt != nil {
		opt(&opts)
	}
	m, err := Read(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func manyName(i int) string { return fmt.Sprintf("org.many.cap%04d", i) }

// TestPeerCyclingOverManyMatricesCannotMakeEachRequestRecompute: each
// matrix /ui/compat computes may cost up to DefaultMaxMatrixSteps
// comparisons (seconds of CPU when the publisher chooses its schemas),
// and any anonymous peer names which one. The model kept 16 of them, the
// oldest dropped first: a peer asking for 17 capabilities in turn found
// none kept, and every request computed a matrix again, 4 pages at once
// per peer, for the model's life. A matrix once computed is now kept for
// the model's life (up to DefaultMaxKeptMatrixBytes together): each is
// computed once a model, however the peers cycle.
func TestPeerCyclingOverManyMatricesCannotMakeEachRequestRecompute(t *testing.T) {
	const caps = 40
	m := readMany(t, caps, nil)
	first := make([]*keptMatrix, caps)
	recomputed := 0
	for range 3 {
		for i := range caps {
			k, ok := m.lookupMatrix(manyName(i))
			if !ok {
				t.Fatalf("no matrix for %s", manyName(i))
			}
			if first[i] == nil {
				first[i] = k
			} else if k != first[i] {
				recomputed++
				first[i] = k
			}
		}
	}
	if recomputed > 0 {
		t.Errorf("a peer cycling over %d capabilities made the same model compute their matrices %d more times in 3 rounds "+
			"(up to DefaultMaxMatrixSteps=%d comparisons each)", caps, recomputed, DefaultMaxMatrixSteps)
	}
}

// TestKeptMatricesAreBoundedByTheirBytes: the matrices kept for a
// model's life are bounded by what they cost together
// (MaxKeptMatrixBytes): past it the oldest are dropped, never the one
// just computed, and the count of bytes kept stays that of the matrices
// kept.
func TestKeptMatricesAreBoundedByTheirBytes(t *testing.T) {
	const caps = 12
	one := readMany(t, 1, nil)
	k, ok := one.lookupMatrix(manyName(0))
	if !ok || k.bytes <= 0 {
		t.Fatalf("a computed matrix is not counted (%v, %d bytes)", ok, k.bytes)
	}
	bound := 3*k.bytes + k.bytes/2 // three of these matrices
	m := readMany(t, caps, func(o *ReadOptions) { o.MaxKeptMatrixBytes = bound })
	for i := range caps {
		if _, ok := m.lookupMatrix(manyName(i)); !ok {
			t.Fatalf("no matrix for %s", manyName(i))
		}
		mm := m.memo
		mm.mu.Lock()
		sum := 0
		for _, k := range mm.kept {
			sum += k.bytes
		}
		kept, bytes, newest := len(mm.kept), mm.bytes, mm.kept[manyName(i)]
		mm.mu.Unlock()
		if bytes > bound || sum != bytes {
			t.Fatalf("after %d matrices the model keeps %d of them counted as %d bytes (really %d), over %d", i+1, kept, bytes, sum, bound)
		}
		if newest == nil {
			t.Fatalf("the matrix just computed (%s) was dropped", manyName(i))
		}
		if want := min(i+1, 3); kept != want {
			t.Errorf("after %d matrices the model keeps %d, want %d", i+1, kept, want)
		}
	}
}
