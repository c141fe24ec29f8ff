package amp

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// nestedOnePairMaps returns depth nested one-pair maps {"a": {"a": ...
// payload}} around payload.
func nestedOnePairMaps(depth int, payload []byte) []byte {
	out := payload
	for i := 0; i < depth; i++ {
		out = append(appendText(AppendHead(nil, MajorMap, 1), "a"), out...)
	}
	return out
}

// nonMinimalBytes returns a byte string of n bytes whose head is in its
// 8-byte form: well-formed, but not deterministic, so Canonical must
// rewrite the whole item that holds it.
func nonMinimalBytes(n int) []byte {
	out := []byte{MajorBytes<<5 | 27, 0, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	return append(out, make([]byte, n)...)
}

// TestNonCanonicalNestedMapsCostDepthTimesTheMessageBeforeTheSignature
// covers memory and copying out of proportion to the message size, before
// any signature is checked.
//
// Attack: an unauthenticated peer sends one message whose body is 30
// nested one-pair maps around a 1 MiB byte string written with a
// non-minimal (8-byte) length head, and any 64-byte signature. The message
// is well within every cap (size, depth 31 < 32, items), but it is not
// deterministic, so Receive's step 1 (decodeEnvelope -> Limits.check)
// rewrites it with canonicalize, and the plaintext path rewrites the body a
// second time (receive.go, `r.cfg.Limits.Canonical(raw.body)`) before the
// signature is verified.
//
// Before: canonicalize encoded every key and value of a map into a fresh
// buffer and then copied it into the parent's, so every byte of the
// payload was allocated and copied once per enclosing map: about 30 x 1 MiB
// per rewrite, twice, some 60 MiB for a 1 MiB message.
//
// Should: rewriting a non-deterministic item costs O(size), not
// O(depth x size): the output once, plus small per-pair bookkeeping. The
// bound below allows 6 copies of the message (the rewritten message, the
// rewritten body, append growth), far from the depth-proportional cost.
func TestNonCanonicalNestedMapsCostDepthTimesTheMessageBeforeTheSignature(t *testing.T) {
	const payload = 1 << 20
	msg, alloc := forgedBodyAllocation(t, nestedOnePairMaps(30, nonMinimalBytes(payload)))
	if limit := uint64(6 * len(msg)); alloc > limit {
		t.Fatalf("Receive of a %d-byte unsigned message allocated %d bytes (%.1f x the message), want at most %d: "+
			"canonicalize copies the payload once per enclosing map", len(msg), alloc, float64(alloc)/float64(len(msg)), limit)
	}
}

// TestUnsortedNestedMapsCostLinearToCanonicalize covers the same attack
// with maps whose pairs are out of order at every level, and with the
// payload inside keys (a map whose key is a map whose key is a map ...),
// where the pairs must really be moved and keys holding reordered maps
// compared: Canonical still allocates a small multiple of the input, not
// one copy per level.
func TestUnsortedNestedMapsCostLinearToCanonicalize(t *testing.T) {
	const payload = 1 << 20
	inValues := nonMinimalBytes(payload)
	inKeys := nonMinimalBytes(payload)
	for range 30 {
		// {"b": 0, "a": inner}: out of order; inner moves.
		inValues = append(hx("a2 6162 00 6161"), inValues...)
		// {inner: 0, 0: 0}: out of order, inner is a key.
		inKeys = append(append(hx("a2"), inKeys...), hx("00 00 00")...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{{"values", inValues}, {"keys", inKeys}} {
		t.Run(tc.name, func(t *testing.T) {
			var out []byte
			var err error
			alloc := testalloc.Least(func() { out, err = Limits{}.Canonical(tc.in) })
			if err != nil {
				t.Fatal(err)
			}
			want, err := canonicalizeReference(tc.in)
			if err != nil || !bytes.Equal(out, want) {
				t.Fatalf("output differs from the reference algorithm (err %v)", err)
			}
			if limit := uint64(3 * len(tc.in)); alloc > limit {
				t.Fatalf("Canonical of %d bytes allocated %d (%.1f x), want at most %d", len(tc.in), alloc, float64(alloc)/float64(len(tc.in)), limit)
			}
		})
	}
}

// canonicalizeReference is the algorithm canonicalize replaced (quadratic
// in the nesting, simple to check by eye): every key and value of a map
// encoded on its own, the pairs sorted by their encoded keys. It is the
// oracle of TestCanonicalizeMatchesTheReference.
func canonicalizeReference(data []byte) ([]byte, error) {
	if _, err := (Limits{MaxStringLen: 1 << 24, MaxArrayLen: 1 << 20}).Canonical(data); err != nil {
		return nil, err
	}
	out, _, err := canonicalizeReferenceAt(nil, data, 0)
	return out, err
}

func canonicalizeReferenceAt(dst, data []byte, off int) ([]byte, int, error) {
	h, err := ReadHead(data, off)
	if err != nil {
		return nil, 0, err
	}
	start := off
	off += h.Size
	switch h.Major {
	case MajorUint, MajorNegint:
		return AppendHead(dst, h.Major, h.Arg), off, nil
	case MajorBytes, MajorText:
		n := int(h.Arg)
		dst = AppendHead(dst, h.Major, h.Arg)
		return append(dst, data[off:off+n]...), off + n, nil
	case MajorArray:
		dst = AppendHead(dst, MajorArray, h.Arg)
		for i := uint64(0); i < h.Arg; i++ {
			if dst, off, err = canonicalizeReferenceAt(dst, data, off); err != nil {
				return nil, 0, err
			}
		}
		return dst, off, nil
	case MajorMap:
		type pair struct{ k, v []byte }
		pairs := make([]pair, h.Arg)
		for i := range pairs {
			var k, v []byte
			if k, off, err = canonicalizeReferenceAt(nil, data, off); err != nil {
				return nil, 0, err
			}
			if v, off, err = canonicalizeReferenceAt(nil, data, off); err != nil {
				return nil, 0, err
			}
			pairs[i] = pair{k, v}
		}
		sort.Slice(pairs, func(i, j int) bool { return bytes.Compare(pairs[i].k, pairs[j].k) < 0 })
		for i := 1; i < len(pairs); i++ {
			if bytes.Equal(pairs[i-1].k, pairs[i].k) {
				return nil, 0, Named(CodeInvalidMessage, "duplicate_map_key", "duplicate key in cbor map")
			}
		}
		dst = AppendHead(dst, MajorMap, h.Arg)
		for _, p := range pairs {
			dst = append(append(dst, p.k...), p.v...)
		}
		return dst, off, nil
	case MajorTag:
		dst = AppendHead(dst, MajorTag, h.Arg)
		return canonicalizeReferenceAt(dst, data, off)
	default:
		switch h.Info {
		case 25, 26, 27:
			return appendShortestFloat(dst, data[start:off]), off, nil
		}
		return append(dst, data[start:off]...), off, nil
	}
}

// randomItem appends a random well-formed item of at most depth levels,
// written with random (often non-minimal) heads and map pairs in random
// order, with maps as keys and, now and then, duplicate keys.
func randomItem(r *rand.Rand, dst []byte, depth int) []byte {
	head := func(dst []byte, major byte, arg uint64) []byte {
		switch r.IntN(4) {
		case 0:
			return AppendHead(dst, major, arg)
		case 1:
			if arg < 1<<16 {
				return append(dst, major<<5|25, byte(arg>>8), byte(arg))
			}
		case 2:
			if arg < 1<<32 {
				return append(dst, major<<5|26, byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
			}
		}
		dst = append(dst, major<<5|27)
		for s := 56; s >= 0; s -= 8 {
			dst = append(dst, byte(arg>>s))
		}
		return dst
	}
	kind := r.IntN(10)
	if depth == 0 {
		kind = r.IntN(5)
	}
	switch kind {
	case 0:
		return head(dst, MajorUint, uint64(r.IntN(300)))
	case 1:
		return head(dst, MajorNegint, uint64(r.IntN(30)))
	case 2:
		n := r.IntN(4)
		dst = head(dst, MajorText, uint64(n))
		for range n {
			dst = append(dst, byte('a'+r.IntN(3)))
		}
		return dst
	case 3:
		n := r.IntN(3)
		dst = head(dst, MajorBytes, uint64(n))
		for range n {
			dst = append(dst, byte(r.IntN(3)))
		}
		return dst
	case 4:
		switch r.IntN(4) {
		case 0:
			return append(dst, 0xf5)
		case 1:
			return append(dst, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0) // 1.5 as a float64
		case 2:
			return append(dst, 0xfa, 0x3f, 0xc0, 0, 0) // 1.5 as a float32
		}
		return append(dst, 0xf6)
	case 5, 6:
		n := r.IntN(4)
		dst = head(dst, MajorArray, uint64(n))
		for range n {
			dst = randomItem(r, dst, depth-1)
		}
		return dst
	case 7:
		dst = head(dst, MajorTag, uint64(r.IntN(30)))
		return randomItem(r, dst, depth-1)
	}
	n := r.IntN(5)
	dst = head(dst, MajorMap, uint64(n))
	var keys [][]byte
	for range n {
		var k []byte
		if len(keys) > 0 && r.IntN(40) == 0 {
			k = keys[r.IntN(len(keys))] // a duplicate, perhaps in another encoding
		} else if r.IntN(2) == 0 {
			k = appendText(nil, string(rune('a'+r.IntN(20))))
		} else {
			k = randomItem(r, nil, depth-1)
		}
		keys = append(keys, k)
		dst = append(dst, k...)
		dst = randomItem(r, dst, depth-1)
	}
	return dst
}

// TestCanonicalizeMatchesTheReference checks that the linear canonicalize
// writes byte for byte what the reference algorithm writes, and refuses
// what it refuses, on the fuzz seeds, the TestCanonical table and random
// items in non-deterministic encodings.
func TestCanonicalizeMatchesTheReference(t *testing.T) {
	var inputs [][]byte
	inputs = append(inputs, seedMessages(t)...)
	for _, s := range []string{"1801", "a2626262016161 02", "c11b000000005f5e1000", "fb3ff8000000000000", "9f01ff", "a26161016161 02", "d9c350a140f4",
		"a2 6161 01 60 02", "a2 20 80 01 a1 f5 f4", "a2 01 01 1801 02", "a2 6161 01 780161 02",
		"a2 a2 02 00 01 00 00 a1 01 00 00", // a key that is an unsorted map
		"a2 a2 02 00 01 00 00 a2 01 00 02 00 00"} {
		inputs = append(inputs, hx(s))
	}
	r := rand.New(rand.NewPCG(47, 1))
	for range 20000 {
		inputs = append(inputs, randomItem(r, nil, 5))
	}
	l := Limits{MaxStringLen: 1 << 24, MaxArrayLen: 1 << 20}
	differ, reordered, refused := 0, 0, 0
	for _, in := range inputs {
		want, wantErr := canonicalizeReference(in)
		got, err := l.Canonical(in)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("input %x: got %x (%v), the reference writes %x (%v)", in, got, err, want, wantErr)
		}
		if err != nil {
			var ge, we *Error
			if !errors.As(err, &ge) || !errors.As(wantErr, &we) || ge.Name != we.Name || ge.Message != we.Message {
				t.Fatalf("input %x: refused with %v, the reference with %v", in, err, wantErr)
			}
			refused++
			continue
		}
		if !bytes.Equal(got, in) {
			differ++
		}
		if w := (canonWriter{data: in, buf: make([]byte, 0, len(in))}); w.reorderedBy(t) {
			reordered++
		}
	}
	// The random items must exercise every branch that matters.
	t.Logf("%d rewritten, %d reordered, %d refused", differ, reordered, refused)
	if differ < 1000 || reordered < 1000 || refused < 50 {
		t.Fatalf("weak corpus: %d rewritten, %d with reordered maps, %d refused", differ, reordered, refused)
	}
}

// reorderedBy runs the first walk of canonicalize and reports whether some
// map was out of order.
func (w *canonWriter) reorderedBy(t *testing.T) bool {
	t.Helper()
	if _, err := w.item(0); err != nil {
		t.Fatal(err)
	}
	return w.reordered > 0
}

// FuzzCanonicalizeMatchesTheReference: the linear canonicalize and the
// reference algorithm agree on every input, output and refusal.
func FuzzCanonicalizeMatchesTheReference(f *testing.F) {
	for _, m := range seedMessages(f) {
		f.Add(m)
	}
	r := rand.New(rand.NewPCG(47, 3))
	for range 64 {
		f.Add(randomItem(r, nil, 5))
	}
	l := Limits{MaxStringLen: 1 << 24, MaxArrayLen: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := canonicalizeReference(data)
		got, err := l.Canonical(data)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("input %x: got %x (%v), the reference writes %x (%v)", data, got, err, want, wantErr)
		}
	})
}

// forgedBodyAllocation puts body into a signed message in place of the
// body that was signed (an unsigned message within the caps) and returns
// it with the bytes Receive allocates refusing it, which must be 1002:
// the least of testalloc.Runs first Receives, each of a Receiver of its
// own (receiverPerRun).
func forgedBodyAllocation(t *testing.T, body []byte) ([]byte, uint64) {
	t.Helper()
	f := newFixture(t)
	good := f.seal(t, Draft{Body: hx("a1616101")})
	msg := edit(t, good, func(m map[string][]byte) {
		m["body"] = body
	})
	if _, err := f.recv.Limits().Canonical(msg); err != nil {
		t.Fatalf("the attack message must be within the caps: %v", err)
	}
	next := receiverPerRun(t)
	alloc := testalloc.Least(func() {
		_, err := next().Receive(context.Background(), msg)
		if CodeOf(err) != CodeInvalidSignature {
			t.Fatalf("forged message: got %v, want 1002 (the body is not what was signed)", err)
		}
	})
	return msg, alloc
}

// receiverPerRun returns a function that returns, at each call, another
// of testalloc.Runs Receivers made now, each newFixture's (its keys and
// clock): one for each run of testalloc.Least. A Receiver keeps the
// did:keys it decoded (Receiver.didKeys), so a second Receive on one
// would be measured warm.
func receiverPerRun(t *testing.T) func() *Receiver {
	t.Helper()
	rs := make([]*Receiver, testalloc.Runs)
	for i := range rs {
		rs[i] = newFixture(t).recv
	}
	n := 0
	return func() *Receiver {
		if n == len(rs) {
			t.Fatalf("more than %d runs of one Receive", len(rs))
		}
		n++
		return rs[n-1]
	}
}
