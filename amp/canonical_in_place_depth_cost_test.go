package amp

import (
	"bytes"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// smallPairChain returns depth nested out-of-order maps around core: each
// level holds n tiny pairs {i: 0} (i from 1, written in a shuffled order)
// and then the pair {0: inner}, so that every level is out of order and
// its pairs average less than inPlacePairBytes however large core is.
func smallPairChain(depth, n int, core []byte) []byte {
	out := core
	for range depth {
		level := AppendHead(nil, MajorMap, uint64(n+1))
		for j := range n {
			level = AppendHead(level, MajorUint, uint64(1+(j*7919)%n))
			level = append(level, 0x00)
		}
		level = append(level, 0x00) // key 0, last: out of order
		out = append(level, out...)
	}
	return out
}

// TestOutOfOrderChainOfSmallPairMapsCopiesTheMessageOncePerLevel covers
// the time canonicalize spends moving bytes, before any signature is
// checked.
//
// Attack: an unauthenticated peer sends an item of 31 nested maps, each
// out of order and holding 300 tiny pairs beside the next level, around a
// 1 MiB byte string. Every level's pairs average well under
// inPlacePairBytes, so each was sorted in place: copied into scratch and
// back, the whole next level with it. Every byte of the core was moved
// twice per level, 62 times in all (some 80 ms of CPU for a 15 MiB message
// at depth 31).
//
// Should: the bytes a rewrite in place moves stay a small multiple of the
// item whatever its depth (at most 8x here), the output byte-identical to
// the reference algorithm, and the records a small fraction of it.
func TestOutOfOrderChainOfSmallPairMapsCopiesTheMessageOncePerLevel(t *testing.T) {
	in := smallPairChain(31, 300, nonMinimalBytes(1<<20))
	// A writer of its own for each run, its buffer made before: a
	// canonWriter keeps what it wrote and counts what it moved.
	ws := make([]canonWriter, testalloc.Runs)
	for i := range ws {
		ws[i] = canonWriter{data: in, buf: make([]byte, 0, len(in))}
	}
	var out []byte
	var err error
	run := 0
	alloc := testalloc.Least(func() {
		out, err = ws[run].run()
		run++
		if err != nil {
			t.Fatal(err)
		}
	})
	w := ws[0]
	for _, o := range ws[1:] {
		if o.moved > w.moved {
			w = o
		}
	}
	if want, err := canonicalizeReference(in); err != nil || !bytes.Equal(out, want) {
		t.Fatalf("output differs from the reference algorithm (err %v)", err)
	}
	t.Logf("%d bytes: moved %d (%.1fx), allocated %d (%.1fx)", len(in), w.moved, float64(w.moved)/float64(len(in)), alloc, float64(alloc)/float64(len(in)))
	if limit := 8 * len(in); w.moved > limit {
		t.Errorf("canonicalize moved %d bytes of a %d-byte item (%.1fx), want at most %d: every level copies the levels under it",
			w.moved, len(in), float64(w.moved)/float64(len(in)), limit)
	}
	if limit := uint64(4 * len(in)); alloc > limit {
		t.Errorf("canonicalize allocated %d bytes for a %d-byte item (%.1fx), want at most %d", alloc, len(in), float64(alloc)/float64(len(in)), limit)
	}
}

// TestMapsRecordedAfterRewritesUnderThemMatchTheReference checks the
// output of canonicalize where maps are recorded because rewrites in place
// under them copied most of their bytes: such maps as values, inside
// arrays, and inside the keys of an out-of-order map (compared by
// keyCursor).
func TestMapsRecordedAfterRewritesUnderThemMatchTheReference(t *testing.T) {
	core := func(b byte) []byte {
		out := AppendHead(nil, MajorBytes, 3000)
		return append(out, bytes.Repeat([]byte{b}, 3000)...)
	}
	inner := func(b byte) []byte { return smallPairChain(1, 2, core(b)) } // rewritten in place
	chain := func(b byte, depth int) []byte { return smallPairChain(depth, 3, inner(b)) }
	keys := AppendHead(nil, MajorMap, 3)
	for _, b := range []byte{9, 7, 8} {
		keys = append(keys, chain(b, 4)...)
		keys = append(keys, 0x00)
	}
	arr := AppendHead(nil, MajorArray, 3)
	for _, b := range []byte{1, 2, 3} {
		arr = append(arr, chain(b, 3)...)
	}
	for name, in := range map[string][]byte{
		"values": chain(5, 6),
		"array":  arr,
		"keys":   keys,
	} {
		t.Run(name, func(t *testing.T) {
			w := canonWriter{data: in, buf: make([]byte, 0, len(in))}
			if _, err := w.item(0); err != nil || len(w.maps) == 0 {
				t.Fatalf("some map must be recorded (err %v)", err)
			}
			got, err := Limits{}.Canonical(in)
			if err != nil {
				t.Fatal(err)
			}
			if want, err := canonicalizeReference(in); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("output differs from the reference algorithm (err %v)", err)
			}
		})
	}
}
