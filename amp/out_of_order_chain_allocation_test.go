package amp

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// quarterNewChain returns levels nested maps around core, each about
// 4/3 the size of the one it holds, its pairs averaging just under
// inPlacePairBytes and written in descending order: every level is sorted
// in place (a quarter of its bytes are new) and is larger than the last.
func quarterNewChain(levels int, core []byte) []byte {
	out := core
	for range levels {
		size := len(out) * 4 / 3
		n := max(2, size/4000)
		fill := (size - len(out)) / (n - 1)
		level := AppendHead(nil, MajorMap, uint64(n))
		for j := n - 2; j >= 0; j-- {
			level = AppendHead(level, MajorUint, uint64(j+1))
			level = append(AppendHead(level, MajorBytes, uint64(fill)), make([]byte, fill)...)
		}
		out = append(AppendHead(level, MajorUint, 0), out...)
	}
	return out
}

// TestOutOfOrderChainsAllocatePastTheDocumentedMultiple covers the
// memory canonicalize allocates before any signature is checked.
//
// Attack: an unauthenticated peer sends a non-deterministic message whose
// body is one of:
//
//   - 31 nested maps of 16,800 tiny pairs each, out of order (2 MB, just
//     under MaxItems). The pair spans of every map being walked (12 bytes a
//     pair) live together, and w.open grows level by level through
//     slices.Grow, which overshoots doubling (append's 1.25x steps from the
//     old capacity up to twice it: about 2.4x); the scratch is regrown at
//     almost every level too. Receive allocated some 21x the message
//     (43 MB), past the "up to some 14x, and 4x more when such levels are
//     recorded" AMP-15 documents.
//   - 31 nested maps, each 4/3 the size of the one it holds with pairs of
//     just under 4 KiB (15 MB): every level is sorted in place, and the
//     scratch, "at most the largest map sorted in place" (AMP-15), is
//     regrown by append's 1.25x steps at every level: some 4.6x the message
//     in scratch alone; Receive allocated 6.6x, 97 MB for one 15 MB
//     message.
//
// Now (docs/SPEC-DECISIONS.md AMP-18) the spans are allocated once at the
// size the scanner measured and the scratch at most twice the item: 6.1x
// and 3.0x.
//
// Should: the pair spans are allocated once, at the size the scanner
// measured, and the scratch at most twice the item in all, so Receive
// allocates at most 10x the first message (the buffer, the scratch, the
// spans at 12 bytes a 4-byte pair, the records, the output, Sig_Input)
// and 4x the second.
func TestOutOfOrderChainsAllocatePastTheDocumentedMultiple(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  []byte
		limit float64
	}{
		{"nested tiny pairs", smallPairChain(31, 16800, []byte{0x00}), 10},
		{"nested quarter-new maps", quarterNewChain(31, nonMinimalBytes(1900)), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, alloc := forgedBodyAllocation(t, tc.body)
			ratio := float64(alloc) / float64(len(msg))
			t.Logf("%d-byte message: Receive allocated %d bytes (%.1fx)", len(msg), alloc, ratio)
			if !testalloc.Race && ratio > tc.limit {
				t.Errorf("Receive of a %d-byte unsigned message allocated %d bytes (%.1fx), want at most %.0fx", len(msg), alloc, ratio, tc.limit)
			}
		})
	}
}
