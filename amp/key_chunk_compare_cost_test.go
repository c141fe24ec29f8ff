package amp

import (
	"bytes"
	"testing"
	"time"
)

// choppedKeys returns an out-of-order map of n pairs {M_i: 0}
// whose keys M_i are maps of p pairs: p-1 tiny pairs {k: 0} (the last
// {p-1: i}, so that the keys differ only at their end) and the pair
// {0: X}, X an out-of-order map of about fill bytes in pairs of 1 KB. With
// reordered, M_i is written in descending key order: out of order, and
// more than three quarters of it (X) already copied by a rewrite in place,
// so canonicalize records it (pairs of at least minRecordPairBytes on
// average) and compares the keys that hold it chunk by chunk, one chunk a
// pair. Otherwise M_i is written in order: the same size and shape, whose
// keys are compared with one memcmp.
func choppedKeys(n, p, fill int, reordered bool) []byte {
	// X: m pairs {j: h'00…'} of about 1 KB each, written in descending
	// order (pairs under inPlacePairBytes: rewritten in place).
	m := max(2, (fill+999)/1000)
	x := AppendHead(nil, MajorMap, uint64(m))
	for j := m - 1; j >= 0; j-- {
		x = AppendHead(x, MajorUint, uint64(j))
		x = append(AppendHead(x, MajorBytes, uint64(fill/m)), make([]byte, fill/m)...)
	}
	out := AppendHead(nil, MajorMap, uint64(n))
	for j := range n {
		i := (j * 7919) % n // 7919 is prime, n a power of two: a permutation
		pairs := make([][]byte, p)
		pairs[0] = append([]byte{0x00}, x...)
		for k := 1; k < p; k++ {
			v := []byte{0x00}
			if k == p-1 {
				v = AppendHead(nil, MajorUint, uint64(i))
			}
			pairs[k] = append(AppendHead(nil, MajorUint, uint64(k)), v...)
		}
		out = AppendHead(out, MajorMap, uint64(p))
		for k := range p {
			if reordered {
				k = p - 1 - k
			}
			out = append(out, pairs[k]...)
		}
		out = append(out, 0x00)
	}
	return out
}

// TestKeysHoldingMostlyCopiedMapsCompareByTinyChunks covers the
// time canonicalize spends sorting, before any signature is checked, since
// maps mostly copied by rewrites in place are recorded (AMP-15 amended).
//
// Attack: an unauthenticated peer sends a map of n keys, out of order, each
// key a map of 60 pairs: 59 tiny pairs and one holding an out-of-order map
// (rewritten in place) just large enough that the key's pairs average
// minRecordPairBytes and more than three quarters of it was copied. Every
// key is recorded, and the keys share all but their last pair, so each of
// the sort's n log n comparisons runs two keyCursors over every pair of
// both keys: a cursor step (frames pushed and popped, records skipped,
// some 25 to 40 ns) per minRecordPairBytes bytes, where a key rewritten in
// place is final bytes that one memcmp compares at several GB/s.
//
// Before (minRecordPairBytes 16): a chunk every 16 bytes; at MaxItems
// (8,192 keys, 8 MB) one unsigned message cost 1.1 s of CPU against 0.16 s
// for its twin whose keys are written in order (same size and shape), and
// 2 MB cost 4x to 9x its twin. Now minRecordPairBytes is 128
// (docs/SPEC-DECISIONS.md AMP-18): chunks of 127 bytes, about the twin's
// time.
//
// Should: a key holding such a map is walked in chunks of at least 64
// bytes on average, so that the cursor steps cost no more than the memcmp
// of the same bytes does several times over, and the message about its
// twin's time (logged: times this short are too noisy to bound here).
func TestKeysHoldingMostlyCopiedMapsCompareByTinyChunks(t *testing.T) {
	const p = 60
	fill := (minRecordPairBytes - 2) * p
	// One key, walked alone: it must be recorded for the attack to apply.
	key := choppedKeys(1, p, fill, true)
	key = key[1 : len(key)-1] // the map's head and its value 0 off
	w := canonWriter{data: key, buf: make([]byte, 0, len(key))}
	if _, err := w.item(0); err != nil {
		t.Fatal(err)
	}
	if len(w.maps) == 0 || w.maps[0].plo == w.maps[0].phi {
		t.Fatalf("the key must be recorded by the mostly-copied rule (records %d)", len(w.maps))
	}
	var c keyCursor
	c.reset(&w, 0, int32(len(w.buf)), 0, int32(len(w.maps)))
	chunks := 0
	for c.next() != nil {
		chunks++
	}
	avg := float64(len(w.buf)) / float64(chunks)
	t.Logf("a %d-byte key is compared in %d chunks (%.0f bytes each)", len(w.buf), chunks, avg)

	if !testing.Short() {
		n := 1
		for n*2*minRecordPairBytes*p <= 2<<20 {
			n *= 2
		}
		best := func(in []byte) time.Duration {
			d := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				out, err := Limits{}.Canonical(in)
				d = min(d, time.Since(start))
				if err != nil {
					t.Fatal(err)
				}
				if want, err := canonicalizeReference(in); err != nil || !bytes.Equal(out, want) {
					t.Fatalf("output differs from the reference algorithm (err %v)", err)
				}
			}
			return d
		}
		flat := best(choppedKeys(n, p, fill, false))
		hostile := best(choppedKeys(n, p, fill, true))
		t.Logf("%d keys: ordered twin %v, hostile %v (%.1fx)", n, flat, hostile, float64(hostile)/float64(flat))
	}
	if avg < 64 {
		t.Errorf("a key holding a map recorded by the mostly-copied rule is compared in chunks of %.0f bytes, want at least 64: a cursor step every few bytes", avg)
	}
}

// underThresholdChain returns levels nested maps around core, each out of
// order and holding, beside the next level, just enough tiny pairs that
// its pairs average under minRecordPairBytes: every level is mostly
// copied already and yet sorted in place.
func underThresholdChain(levels int, core []byte) []byte {
	out := core
	for range levels {
		if len(out) > DefaultMaxMessageSize {
			break // over the caps already: the test says so
		}
		n := len(out)/(minRecordPairBytes-4) + 1
		level := AppendHead(nil, MajorMap, uint64(n+1))
		for j := range n {
			level = AppendHead(level, MajorUint, uint64(256+(j*7919+1)%n)) // 3-byte keys
			level = append(level, 0x00)
		}
		out = append(AppendHead(level, MajorUint, 0), out...)
	}
	return out
}

// TestMostlyCopiedMapsOfSmallPairsMoveWithinTheItemCap checks the bound
// that the mostly-copied rule's threshold trades for chunks of keys: maps
// sorted in place though mostly copied have pairs under
// minRecordPairBytes on average, so all the rewrites in place of an item
// move at most 8x the item (maps of at least a quarter new bytes) plus
// minRecordPairBytes x MaxItems (2 x minRecordPairBytes a pair, at most
// MaxItems / 2 pairs): 128 MiB, some tens of milliseconds of copying.
//
// Attack: 31 nested maps around a 1.2 MB map rewritten in place, each
// holding just enough 4-byte pairs to keep its average under the
// threshold (3.2 MB, most of MaxItems): every level is copied in place.
func TestMostlyCopiedMapsOfSmallPairsMoveWithinTheItemCap(t *testing.T) {
	in := underThresholdChain(31, quarterNewChain(1, nonMinimalBytes(880<<10)))
	if _, err := (Limits{}).Canonical(in); err != nil {
		t.Fatalf("the attack item must be within the caps: %v", err)
	}
	w := canonWriter{data: in, buf: make([]byte, 0, len(in))}
	if _, err := w.run(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes: moved %d (%.1fx)", len(in), w.moved, float64(w.moved)/float64(len(in)))
	if limit := 8*len(in) + minRecordPairBytes*DefaultMaxItems; w.moved > limit {
		t.Errorf("rewrites in place moved %d bytes of a %d-byte item, want at most %d", w.moved, len(in), limit)
	}
}
