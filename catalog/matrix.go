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
// matrixBounds, and keeps it for its life (matrixMemo): a peer asking for
// one matrix after another makes each computed once a model, not once a
// request; only past maxBytes of them is the oldest dropped.

// findingCost is what one kept finding costs beyond its strings' bytes:
// its seven string headers, rounded up.
const findingCost = 128

// cellCost is what one kept cell costs beyond its strings and findings:
// its headers and slices, rounded up.
const cellCost = 256

// findingBytes is what the finding f costs kept.
func findingBytes(f compat.Finding) int {
	return findingCost + len(f.Verdict) + len(f.Rule) + len(f.Pointer) + len(f.Artifact) + len(f.At) + len(f.Detail)
}

// matrixBytes is what the matrix mx costs kept, with findings (its count
// a cell).
func matrixBytes(mx compat.Matrix, findings []int) int {
	n := len(mx.Capability) + 8*len(findings)
	for _, v := range mx.Versions {
		n += 16 + len(v)
	}
	for _, c := range mx.Cells {
		n += cellCost + len(c.Requester) + len(c.Provider) + len(c.Level) + len(c.Input.Verdict) + len(c.Output.Verdict)
		for _, fs := range [][]compat.Finding{c.Lost, c.Input.Findings, c.Output.Findings} {
			for _, f := range fs {
				n += findingBytes(f)
			}
		}
	}
	return n
}

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
	// bytes is what it costs kept (matrixBytes), once computed.
	bytes int
}

// matrixMemo keeps the matrices computed when asked for the model's life:
// while they cost at most maxBytes together (matrixBytes; 0: no bound),
// else the oldest are dropped, never the one just computed.
type matrixMemo struct {
	mu       sync.Mutex
	kept     map[string]*keptMatrix
	order    []string // oldest first
	bytes    int      // of the matrices kept and computed
	maxBytes int
}

// computeMatrix computes the matrix of the capability name, within the
// read's bounds: the comparisons of all its checks, and the findings kept
// of each report and of the whole matrix, dropped as each cell is decided
// so that the matrix never holds more.
//
// A matrix computed when asked (lazy) reads the kept schemas through
// sources of its own (ownSources), dropped with the computation: the
// model's sources would keep every schema they parsed (a tree many times
// its text) for the model's life, uncounted by the memo's bound.
func (m *Model) computeMatrix(name string) keptMatrix {
	r := m.provRange[name]
	vs := m.provided[r[0]:r[1]]
	if m.lazy {
		vs = m.ownSources(r)
	}
	var k keptMatrix
	left := m.bounds.bytes
	k.mx = compat.MatrixOf(vs, m.bounds.steps, func(c *compat.Cell) {
		k.findings = append(k.findings, len(c.Input.Findings)+len(c.Output.Findings))
		c.Input.Findings = m.bounds.keep(c.Input.Findings, &left)
		c.Output.Findings = m.bounds.keep(c.Output.Findings, &left)
		c.Lost = m.bounds.keep(c.Lost, &left)
	})
	return k
}

// ownSources are the versions provided[r[0]:r[1]] with sources of their
// own, one a bundle, over the schemas the model kept.
func (m *Model) ownSources(r [2]int) []compat.Provided {
	vs := slices.Clone(m.provided[r[0]:r[1]])
	srcs := map[string]*compat.Source{}
	for i := range vs {
		b := m.provBundles[r[0]+i]
		s := srcs[b]
		if s == nil {
			s = compat.NewSource(&keptLoader{m: m, bundle: b})
			srcs[b] = s
		}
		vs[i].Src = s
	}
	return vs
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
			cost := findingBytes(f)
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
	k, ok, _ := m.lookupMatrixFor(name, nil)
	return k, ok
}

// lookupMatrixFor is lookupMatrix for a caller whose computations admit
// lets start (a page's: its peer's compute share), when not nil: a
// matrix kept or being computed costs nothing; one to compute is
// computed only when admit lets it, else its refusal is returned.
func (m *Model) lookupMatrixFor(name string, admit func() (func(), *refusal)) (*keptMatrix, bool, *refusal) {
	if i, ok := m.matrix[name]; ok {
		return &m.computed[i], true, nil
	}
	if !m.HasMatrix(name) {
		return nil, false, nil
	}
	mm := m.memo
	mm.mu.Lock()
	if k, ok := mm.kept[name]; ok {
		mm.mu.Unlock()
		<-k.done
		return k, true, nil
	}
	if admit != nil {
		end, no := admit()
		if no != nil {
			mm.mu.Unlock()
			return nil, false, no
		}
		defer end()
	}
	k := &keptMatrix{done: make(chan struct{})}
	mm.kept[name] = k
	mm.order = append(mm.order, name)
	mm.mu.Unlock()
	defer close(k.done)
	c := m.computeMatrix(name)
	k.mx, k.findings = c.mx, c.findings
	mm.keep(name, k, matrixBytes(c.mx, c.findings))
	return k, true, nil
}

// keep counts the matrix k of name, just computed, as kept, if it still
// is, and drops the oldest others while the kept ones cost more than
// maxBytes.
func (mm *matrixMemo) keep(name string, k *keptMatrix, bytes int) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.kept[name] != k {
		return
	}
	k.bytes = bytes
	mm.bytes += bytes
	for i := 0; mm.maxBytes > 0 && mm.bytes > mm.maxBytes && i < len(mm.order); {
		n := mm.order[i]
		if n == name {
			i++
			continue
		}
		mm.bytes -= mm.kept[n].bytes
		delete(mm.kept, n)
		mm.order = slices.Delete(mm.order, i, i+1)
	}
}
