package amp

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// tinyReorderedMaps returns an array of arrays holding n copies of
// the two-pair map {1: 0, 0: 0} (a2 01 00 00 00): five bytes and five
// items each, out of order, so canonicalize records every one of them.
func tinyReorderedMaps(n int) []byte {
	const perArray = 50000
	out := AppendHead(nil, MajorArray, uint64((n+perArray-1)/perArray))
	for left := n; left > 0; left -= perArray {
		k := min(left, perArray)
		out = AppendHead(out, MajorArray, uint64(k))
		for range k {
			out = append(out, 0xa2, 0x01, 0x00, 0x00, 0x00)
		}
	}
	return out
}

// TestTinyOutOfOrderMapsCostOverEightyTimesTheMessageBeforeTheSignature
// covers the bookkeeping of the linear canonicalize (AMP-15) on many tiny
// maps, before any signature is checked.
//
// Attack: an unauthenticated peer sends one message whose body is 190,000
// two-pair maps {1: 0, 0: 0} (5 bytes each, just under amp's MaxItems of
// 1,048,576 items: some 0.95 MB in all) and any signature. Every map is out
// of order, so canonicalize keeps, per map, a mapOrder record (48 B, in a
// slice grown by append, which for large slices allocates about 5x its final
// size in all) and a slices.Clone of its two pairSpans (112 B): about 200 B
// of bookkeeping per 5-byte map. Receive rewrites the message (step 1) and
// then the body again (receive.go, Limits.Canonical(raw.body)).
//
// Before (review 52): Receive allocated some 160 MB, about 165x the
// message, before it found the signature wrong (Canonical alone about 80x);
// the MaxItems cap was what bounded it, not the message size. Now a map of
// small pairs is sorted in place and leaves no record (AMP-15).
//
// Should: the rewrite costs a small multiple of the message, as AMP-15 says
// and as TestNonCanonicalNestedMapsCostDepthTimesTheMessageBeforeTheSignature
// checks for nested maps: at most 6 copies of the message here too.
func TestTinyOutOfOrderMapsCostOverEightyTimesTheMessageBeforeTheSignature(t *testing.T) {
	msg, alloc := forgedBodyAllocation(t, tinyReorderedMaps(190000))
	if limit := uint64(6 * len(msg)); alloc > limit {
		t.Fatalf("Receive of a %d-byte unsigned message of tiny out-of-order maps allocated %d bytes (%.0fx the message), want at most %d: "+
			"canonicalize keeps about 200 B of records per 5-byte map", len(msg), alloc, float64(alloc)/float64(len(msg)), limit)
	}
}

// sharedPrefixKeys returns a map of n pairs, written in a shuffled
// order, whose keys are arrays [R, R, ... (m times), i] with distinct i and
// value 0. With reordered, R is {1: 0, 0: 0}, out of order, so every key
// holds reordered maps (it is not "flat") and compareKeys walks it with two
// keyCursors; otherwise R is {0: 0, 1: 0}, already in order, and the item
// has exactly the same size and shape.
func sharedPrefixKeys(n, m int, reordered bool) []byte {
	r := []byte{0xa2, 0x00, 0x00, 0x01, 0x00}
	if reordered {
		r = []byte{0xa2, 0x01, 0x00, 0x00, 0x00}
	}
	out := AppendHead(nil, MajorMap, uint64(n))
	for j := range n {
		i := (j * 7919) % n // 7919 is prime, n a power of two: a permutation
		out = AppendHead(out, MajorArray, uint64(m+1))
		for range m {
			out = append(out, r...)
		}
		out = AppendHead(out, MajorUint, uint64(i))
		out = append(out, 0x00)
	}
	return out
}

// TestKeysHoldingReorderedMapsMultiplyTheSortCost covers the
// time of canonicalize when the keys of an out-of-order map hold
// out-of-order maps and share a long prefix.
//
// Attack: an unauthenticated peer sends a map of 2,048 pairs, out of order,
// whose keys are arrays of 48 tiny out-of-order maps {1: 0, 0: 0} and then
// a distinct integer (about 0.5 MB, half of amp's MaxItems). Sorting the
// pairs takes some n·log n = 22,000 comparisons, each of which runs two
// keyCursors over the whole shared prefix: a few dozen cursor steps (frame
// pushes, map-skipping loops, 1- or 2-byte chunk compares) per 5-byte map,
// where the old algorithm, and canonicalize itself for keys without
// reordered maps, compares the keys' bytes with one memcmp.
//
// Before (review 52): 7x to 18x the time of the same message whose inner
// maps are in order (identical size and shape) on a 2-core machine; at
// MaxItems (n = 4,096, about 1 MB) one unsigned message cost about 1.1 s of
// CPU before its signature was checked. Now the tiny maps are sorted in
// place, so the keys are final bytes compared with one memcmp; keys that
// hold recorded maps (pairs of more than inPlacePairBytes) are covered by
// TestKeysHoldingRecordedMapsCostAboutTheirOrderedTwin.
//
// Should: no map inside a key is recorded (each of the 98,304 tiny maps
// is sorted in place, so every key is final bytes that one memcmp
// compares): at most the outer map is, where the regression recorded
// every inner one. The output is the reference algorithm's. The two
// rewrites' times are logged (a busy machine cannot decide a bound on
// them; the cost is what the record count shows).
func TestKeysHoldingReorderedMapsMultiplyTheSortCost(t *testing.T) {
	const n, m = 2048, 48
	hostile := sharedPrefixKeys(n, m, true)
	w := canonWriter{data: hostile, buf: make([]byte, 0, len(hostile))}
	if _, err := w.item(0); err != nil {
		t.Fatal(err)
	}
	if w.reordered < n*m {
		t.Fatalf("the test map has %d maps out of order, want at least %d: it covers nothing", w.reordered, n*m)
	}
	if len(w.maps) > 1 {
		t.Fatalf("%d maps recorded, want at most the outer one: the keys hold recorded maps, which compareKeys walks with keyCursors on every comparison of the sort", len(w.maps))
	}
	out, err := Limits{}.Canonical(hostile)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := canonicalizeReference(hostile); err != nil || !bytes.Equal(out, want) {
		t.Fatalf("output differs from the reference algorithm (err %v)", err)
	}
	timed := func(in []byte) time.Duration {
		start := time.Now()
		if _, err := (Limits{}).Canonical(in); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	t.Logf("a %d-byte map: ordered inner maps %v, reordered %v", len(hostile), timed(sharedPrefixKeys(n, m, false)), timed(hostile))
}

// largeReordered returns the map {1: <n zero bytes>, 0: 0}, out of order
// when reordered, else written {0: 0, 1: ...}: its pairs average more than
// inPlacePairBytes when n is large, so canonicalize records it.
func largeReordered(n int, reordered bool) []byte {
	big := append(AppendHead(nil, MajorBytes, uint64(n)), make([]byte, n)...)
	if reordered {
		return append(append(hx("a2 01"), big...), hx("00 00")...)
	}
	return append(hx("a2 00 00 01"), big...)
}

// recordedKeysMap returns a map of n pairs, out of order, whose keys are
// arrays of two large maps (largeReordered, out of order when reordered)
// and a distinct integer.
func recordedKeysMap(n int, reordered bool) []byte {
	out := AppendHead(nil, MajorMap, uint64(n))
	for j := range n {
		out = AppendHead(out, MajorArray, 3)
		for range 2 {
			out = append(out, largeReordered(2*inPlacePairBytes+100, reordered)...)
		}
		out = AppendHead(out, MajorUint, uint64((j*73)%n))
		out = append(out, 0x00)
	}
	return out
}

// TestKeysHoldingRecordedMapsCostAboutTheirOrderedTwin covers the sort of a
// map whose keys hold maps canonicalize records (pairs larger than
// inPlacePairBytes), which compareKeys walks with keyCursors.
//
// Attack: an unauthenticated peer sends a map of 256 pairs, out of order,
// whose keys are arrays of two large out-of-order maps and a distinct
// integer, so every comparison of the sort walks a long shared prefix.
//
// Should: the cursors yield the key in chunks of whole large pairs, so the
// rewrite costs about what the same map with ordered inner maps costs: a
// key walks in at most one chunk for what precedes each recorded map (its
// head included), one a pair of it, and one after the last (7 chunks for
// a key of about 16 KB here), so each comparison of the sort takes a
// handful of cursor steps and memcmps of whole pairs. The times of the
// 4.2 MB map and its ordered twin are logged (a busy machine cannot decide
// a bound on them; the chunk count is what the cursors cost).
func TestKeysHoldingRecordedMapsCostAboutTheirOrderedTwin(t *testing.T) {
	// One key, walked alone: its maps must be recorded for the attack to
	// apply.
	key := recordedKeysMap(1, true)
	key = key[1 : len(key)-1] // the map's head and its value 0 off
	w := canonWriter{data: key, buf: make([]byte, 0, len(key))}
	if _, err := w.item(0); err != nil {
		t.Fatal(err)
	}
	bound := 1
	for _, m := range w.maps {
		if m.plo == m.phi {
			t.Fatalf("the inner maps must be recorded out of order, not rewritten in place (records %+v)", w.maps)
		}
		bound += 1 + int(m.phi-m.plo)
	}
	if len(w.maps) != 2 {
		t.Fatalf("the key's two inner maps must be recorded, not rewritten in place (records %d)", len(w.maps))
	}
	var c keyCursor
	c.reset(&w, 0, int32(len(w.buf)), 0, int32(len(w.maps)))
	chunks := 0
	for c.next() != nil {
		chunks++
	}
	t.Logf("a %d-byte key holding %d recorded maps is compared in %d chunks (bound %d)", len(w.buf), len(w.maps), chunks, bound)
	if chunks > bound {
		t.Fatalf("a %d-byte key holding %d recorded maps is compared in %d chunks, want at most %d: the cursors do not yield whole pairs", len(w.buf), len(w.maps), chunks, bound)
	}
	if testing.Short() {
		return
	}
	timed := func(in []byte) time.Duration {
		start := time.Now()
		if _, err := (Limits{}).Canonical(in); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	hostileIn, twinIn := recordedKeysMap(256, true), recordedKeysMap(256, false)
	t.Logf("ordered twin %v, keys holding recorded maps %v", timed(twinIn), timed(hostileIn))
}

// TestChainsOfLargeOutOfOrderMapsCostASmallMultiple covers the records
// canonicalize keeps for maps of large pairs: 31 nested out-of-order maps
// {0: 0, "a": inner} around a core just large enough to be recorded, many
// times over, so that every level is recorded.
//
// Should: the records (20 bytes a map, 16 a pair) stay a fraction of the
// message: Canonical allocates at most 3 copies of it (the first walk's
// buffer, the output, the records).
func TestChainsOfLargeOutOfOrderMapsCostASmallMultiple(t *testing.T) {
	chain := largeReordered(2*inPlacePairBytes+1, true)
	for range 30 {
		chain = append(append(hx("a2 6161"), chain...), hx("00 00")...)
	}
	in := AppendHead(nil, MajorArray, 100)
	for range 100 {
		in = append(in, chain...)
	}
	var out []byte
	var err error
	alloc := testalloc.Least(func() { out, err = Limits{}.Canonical(in) })
	if err != nil {
		t.Fatal(err)
	}
	if want, err := canonicalizeReference(in); err != nil || !bytes.Equal(out, want) {
		t.Fatalf("output differs from the reference algorithm (err %v)", err)
	}
	if limit := uint64(3 * len(in)); alloc > limit {
		t.Fatalf("Canonical of %d bytes of chains of large maps allocated %d (%.1fx), want at most %d", len(in), alloc, float64(alloc)/float64(len(in)), limit)
	}
}

// TestCanonicalizeBothPathsMatchTheReference drives every out-of-order map
// down one path of canonicalize, then the other (inPlace 1: every map
// recorded; inPlace 1<<30: every map rewritten in place), and checks both
// against the reference algorithm on random items, some with large byte
// strings, so that records nested in maps rewritten in place, and keys
// holding records, are exercised as well.
func TestCanonicalizeBothPathsMatchTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(52, 1))
	var inputs [][]byte
	for range 5000 {
		inputs = append(inputs, randomItem(r, nil, 5))
	}
	for range 300 {
		// A map whose keys and values are random items, some large.
		n := 2 + r.IntN(4)
		in := AppendHead(nil, MajorMap, uint64(n))
		for range 2 * n {
			if r.IntN(3) == 0 {
				size := r.IntN(3 * inPlacePairBytes)
				in = append(AppendHead(in, MajorBytes, uint64(size)), make([]byte, size)...)
				continue
			}
			in = randomItem(r, in, 4)
		}
		inputs = append(inputs, in)
	}
	for _, in := range inputs {
		want, wantErr := canonicalizeReference(in)
		if wantErr != nil {
			continue
		}
		for _, inPlace := range []int{0, 1, 1 << 30} {
			w := canonWriter{data: in, buf: make([]byte, 0, len(in)), inPlace: inPlace}
			got, err := w.run()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("inPlace %d, input %x: got %x (%v), the reference writes %x", inPlace, in, got, err, want)
			}
		}
	}
}
