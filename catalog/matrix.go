package catalog

import (
	"slices"
	"sync"

	"github.com/ampbundle/ampbundle/compat"
)

// A publisher chooses the schemas of its versions, so one matrix may ask
// n² cells of up to compat.MaxSteps comparisons a side, each with as many
// findings as its schemas have properties. The pages' model therefore
// computes a matrix only when its page asks for it, within
// matrixBounds, and keeps a few of them (matrixMemo).

// findingCost is what one kept finding costs beyond its strings' bytes:
// its seven string headers, rounded up.
const findingCost = 128

// matrixBounds are the bounds of the matrices of a read (ReadOptions); 0
// is no bound.
type matrixBounds struct {
	steps, perReport, bytes int
}

// keptMatrix is a matrix as the model keeps it: findings are, by cell,
// how many findings its input and output reports had before the bounds
// dropped some. done is closed once it is computed.
type keptMatrix struct {
	done     chan struct{}
	mx       compat.Matrix
	findings []int
}

// matrixMemo keeps the matrices computed when asked, at most
// maxKeptMatrices, the oldest dropped first.
type matrixMemo struct {
	mu    sync.Mutex
	kept  map[string]*keptMatrix
	order []string // oldest first
}

// computeMatrix computes the matrix of the capability name, within the
// read's bounds: the comparisons of all its checks, and the findings kept
// of each report and of the whole matrix, dropped as each cell is decided
// so that the matrix never holds more.
func (m *Model) computeMatrix(name string) keptMatrix {
	r := m.provRange[name]
	var k keptMatrix
	left := m.bounds.bytes
	k.mx = compat.MatrixOf(m.provided[r[0]:r[1]], m.bounds.steps, func(c *compat.Cell) {
		k.findings = append(k.findings, len(c.Input.Findings)+len(c.Output.Findings))
		c.Input.Findings = m.bounds.keep(c.Input.Findings, &left)
		c.Output.Findings = m.bounds.keep(c.Output.Findings, &left)
		c.Lost = m.bounds.keep(c.Lost, &left)
	})
	return k
}

// keep is the findings of fs the bounds keep, in a slice of their own when
// some are dropped (so that it does not hold them); left is what is left
// of the matrix's bytes, and is 0 for good once a finding does not fit.
func (b matrixBounds) keep(fs []compat.Finding, left *int) []compat.Finding {
	kept := fs
	if b.perReport > 0 && len(kept) > b.perReport {
		kept = kept[:b.perReport]
	}
	if b.bytes > 0 {
		for i, f := range kept {
			cost := findingCost + len(f.Verdict) + len(f.Rule) + len(f.Pointer) + len(f.Artifact) + len(f.At) + len(f.Detail)
			if cost > *left {
				*left, kept = 0, kept[:i]
				break
			}
			*left -= cost
		}
	}
	switch {
	case len(kept) == len(fs):
		return fs
	case len(kept) == 0:
		return nil
	}
	return slices.Clone(kept)
}

// lookupMatrix is the matrix of the capability name: the one computed in
// the read, or the one kept in the memo, computed now if need be (one
// computation at a time for a name; those asking meanwhile wait for it).
func (m *Model) lookupMatrix(name string) (*keptMatrix, bool) {
	if i, ok := m.matrix[name]; ok {
		return &m.computed[i], true
	}
	if !m.HasMatrix(name) {
		return nil, false
	}
	mm := m.memo
	mm.mu.Lock()
	if k, ok := mm.kept[name]; ok {
		mm.mu.Unlock()
		<-k.done
		return k, true
	}
	k := &keptMatrix{done: make(chan struct{})}
	if len(mm.order) >= maxKeptMatrices {
		delete(mm.kept, mm.order[0])
		mm.order = mm.order[1:]
	}
	mm.kept[name] = k
	mm.order = append(mm.order, name)
	mm.mu.Unlock()
	defer close(k.done)
	c := m.computeMatrix(name)
	k.mx, k.findings = c.mx, c.findings
	return k, true
}
