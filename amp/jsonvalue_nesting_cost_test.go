package amp

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// manyItems returns an array of 15 arrays of 65,536 zeros: about one
// million items in about one megabyte, in deterministic form.
func manyItems() []byte {
	out := AppendHead(nil, MajorArray, 15)
	for range 15 {
		out = AppendHead(out, MajorArray, 1<<16)
		out = append(out, make([]byte, 1<<16)...)
	}
	return out
}

// TestJSONValueWalksEachNestedMapsSubtreeAgain covers CPU out of
// proportion to a peer's CAP_RESULT.
//
// Attack: a provider answers a CAP_INVOKE with a result of 30 nested
// one-pair maps {"a": {"a": ... }} around about a million small items
// (one megabyte, deterministic, within every cap). client.Call and
// `ampagent invoke` render the result with amp.JSONValue.
//
// Before: the renderer first walked every pair of a map with itemEnd to
// decide whether all keys are text, which walks each value's whole
// subtree, and then rendered the pairs, whose nested maps walked their
// subtrees again: every item was visited once per enclosing map, 30 times
// here (up to 32 under the default depth cap).
//
// Should: rendering is linear in the item, whatever its nesting: the
// walks of JSONValue (the recording itemWalk and the rendering) visit each
// of the item's items at most twice in all, 30 maps deep as one map deep,
// where the regression visited them some 30 times each. The times of both
// are logged (before the fix the nested one took about 10 times as long;
// a busy machine cannot decide a bound on them).
func TestJSONValueWalksEachNestedMapsSubtreeAgain(t *testing.T) {
	items := manyItems()
	flat := nestedOnePairMaps(1, items)
	deep := nestedOnePairMaps(30, items)
	for _, b := range [][]byte{flat, deep} {
		if !(Limits{}).IsCanonical(b) {
			t.Fatal("the attack item must be deterministic and within the caps")
		}
	}
	payload := itemWalk{data: items}
	payload.end(0)
	for _, tc := range []struct {
		in    []byte
		depth int
		what  string
	}{{flat, 1, "one map deep"}, {deep, 30, "30 maps deep"}} {
		start := time.Now()
		_, err := JSONValue(tc.in)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		_, visits := jsonValue(tc.in)
		n := payload.visited + 2*tc.depth // each map and its key "a"
		t.Logf("%s: %d items, %d visits, %v", tc.what, n, visits, took)
		if visits > 2*n {
			t.Fatalf("JSONValue of %d bytes %s visited %d items, %.1f x its %d, want at most 2 x: "+
				"each map walks its whole subtree before rendering it", len(tc.in), tc.what, visits, float64(visits)/float64(n), n)
		}
	}
}

// TestJSONValueMatchesTheReference checks that the linear renderer writes
// byte for byte what the renderer it replaced writes, on the fuzz seeds,
// the TestJSONValue shapes and random items (maps with text keys, with
// other keys and with both, nested in each other).
func TestJSONValueMatchesTheReference(t *testing.T) {
	var inputs [][]byte
	inputs = append(inputs, seedMessages(t)...)
	for _, s := range []string{"a2 6161 01 6162 a1 01 02", "a2 01 a1 6161 02 6161 a1 02 03", "c1 a1 6178 f97e00", "82 a0 a1 40 f6", "a1 a1 6161 01 a1 6162 02",
		"3bffffffffffffffff", "3b7fffffffffffffff", "f820", "f7", "fb7ff0000000000000"} {
		inputs = append(inputs, hx(s))
	}
	r := rand.New(rand.NewPCG(47, 2))
	for range 20000 {
		inputs = append(inputs, randomItem(r, nil, 5))
	}
	objects, maps := 0, 0
	for _, in := range inputs {
		if _, err := (Limits{}).Canonical(in); err != nil {
			continue
		}
		got, err := JSONValue(in)
		if err != nil {
			t.Fatalf("%x: %v", in, err)
		}
		want, _ := jsonReference(nil, in, 0)
		if !bytes.Equal(got, want) {
			t.Fatalf("%x: got %s, the reference writes %s", in, got, want)
		}
		w := itemWalk{data: in, record: true}
		w.end(0)
		for _, o := range w.objects {
			if o {
				objects++
			} else {
				maps++
			}
		}
	}
	t.Logf("%d maps as objects, %d others", objects, maps)
	if objects < 1000 || maps < 1000 {
		t.Fatalf("weak corpus: %d maps rendered as objects, %d others", objects, maps)
	}
}

// jsonReference is the renderer JSONValue replaced (each map walks its
// pairs with itemEnd before rendering them): the oracle of
// TestJSONValueMatchesTheReference.
func jsonReference(dst, data []byte, off int) ([]byte, int) {
	h, _ := ReadHead(data, off)
	start := off
	off += h.Size
	switch h.Major {
	case MajorUint:
		return strconv.AppendUint(dst, h.Arg, 10), off
	case MajorNegint:
		if h.Arg < math.MaxInt64 {
			return strconv.AppendInt(dst, -1-int64(h.Arg), 10), off
		}
		if h.Arg == math.MaxUint64 {
			return append(dst, "-18446744073709551616"...), off
		}
		dst = append(dst, '-')
		return strconv.AppendUint(dst, h.Arg+1, 10), off
	case MajorBytes:
		n := int(h.Arg)
		dst = append(dst, `{"bytes":"`...)
		dst = hex.AppendEncode(dst, data[off:off+n])
		return append(dst, `"}`...), off + n
	case MajorText:
		n := int(h.Arg)
		return appendJSONString(dst, string(data[off:off+n])), off + n
	case MajorArray:
		dst = append(dst, '[')
		for i := uint64(0); i < h.Arg; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, off = jsonReference(dst, data, off)
		}
		return append(dst, ']'), off
	case MajorMap:
		allText := true
		p := off
		for i := uint64(0); i < h.Arg; i++ {
			kh, _ := ReadHead(data, p)
			if kh.Major != MajorText {
				allText = false
			}
			p = itemEnd(data, itemEnd(data, p))
		}
		if allText {
			dst = append(dst, '{')
			for i := uint64(0); i < h.Arg; i++ {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst, off = jsonReference(dst, data, off)
				dst = append(dst, ':')
				dst, off = jsonReference(dst, data, off)
			}
			return append(dst, '}'), off
		}
		dst = append(dst, `{"map":[`...)
		for i := uint64(0); i < h.Arg; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst, off = jsonReference(dst, data, off)
			dst = append(dst, `,"value":`...)
			dst, off = jsonReference(dst, data, off)
			dst = append(dst, '}')
		}
		return append(dst, "]}"...), off
	case MajorTag:
		dst = append(dst, `{"tag":`...)
		dst = strconv.AppendUint(dst, h.Arg, 10)
		dst = append(dst, `,"value":`...)
		dst, off = jsonReference(dst, data, off)
		return append(dst, '}'), off
	}
	switch h.Info {
	case 20:
		return append(dst, "false"...), off
	case 21:
		return append(dst, "true"...), off
	case 22:
		return append(dst, "null"...), off
	case 25, 26, 27:
		f := floatValue(data[start:off])
		switch {
		case math.IsNaN(f):
			return append(dst, `{"float":"NaN"}`...), off
		case math.IsInf(f, 1):
			return append(dst, `{"float":"Infinity"}`...), off
		case math.IsInf(f, -1):
			return append(dst, `{"float":"-Infinity"}`...), off
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), off
	}
	dst = append(dst, `{"simple":`...)
	dst = strconv.AppendUint(dst, h.Arg, 10)
	return append(dst, '}'), off
}
