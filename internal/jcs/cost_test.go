package jcs

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestKeySortNeedsNoUTF16Copy: the in-place comparison orders names as
// their UTF-16 code units do, surrogate pairs against U+E000-U+FFFF
// included, and allocates nothing.
func TestKeySortNeedsNoUTF16Copy(t *testing.T) {
	names := []string{"", "a", "ab", "\u007f", "é", "\ud7ff", "\ue000", "\uffff", "😀", "😀a", "\U0010ffff", "a😀", "a\uffff"}
	ref := func(a, b string) bool {
		ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
		for i := 0; i < len(ua) && i < len(ub); i++ {
			if ua[i] != ub[i] {
				return ua[i] < ub[i]
			}
		}
		return len(ua) < len(ub)
	}
	for _, a := range names {
		for _, b := range names {
			if lessUTF16(a, b) != ref(a, b) {
				t.Errorf("lessUTF16(%q, %q) = %v", a, b, !ref(a, b))
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { lessUTF16("a😀", "a\uffff") }); n != 0 {
		t.Errorf("lessUTF16 allocates %v times", n)
	}
}

// TestTooManyValuesIsRefusedByName: ParseLimited refuses a text of more
// values than its bound with ErrTooMany, and takes one at the bound.
func TestTooManyValuesIsRefusedByName(t *testing.T) {
	text := "[" + strings.Repeat("0,", 99) + "0]" // 101 values
	if _, err := ParseLimited([]byte(text), MaxDepth, 100); !errors.Is(err, ErrTooMany) {
		t.Errorf("101 values under a bound of 100: %v", err)
	}
	if _, err := ParseLimited([]byte(text), MaxDepth, 101); err != nil {
		t.Errorf("101 values under a bound of 101: %v", err)
	}
}

// TestCanonicalNumbersCostNoAllocation: checking that a number is written
// in its RFC 8785 form allocates nothing, small integer or not.
func TestCanonicalNumbersCostNoAllocation(t *testing.T) {
	for _, s := range []string{"0", "-12345", "1.7976931348623157e+308", "1e-7", "0.5"} {
		if !IsCanonicalNumber(s) {
			t.Errorf("%s: not canonical", s)
		}
		if n := testing.AllocsPerRun(100, func() { IsCanonicalNumber(s) }); n != 0 && !testalloc.Race {
			t.Errorf("%s: %v allocations", s, n)
		}
	}
	for _, s := range []string{"-0", "1E2", "1e21", "0.50", "10000000000000000000000"} {
		if IsCanonicalNumber(s) {
			t.Errorf("%s: taken as canonical", s)
		}
	}
}

// lessUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3).
func lessUTF16(a, b string) bool { return compareUTF16(a, b) < 0 }

// TestContainersAreAllocatedOnceAtTheirLength: a wide object grew its
// member list by doubling (up to four times its final size, 32 bytes a
// member: "a":0 is five bytes), and a wide object of short members cost
// about 11 times its text to parse. Every array and object is now
// allocated once at the length a scan of the text finds, brackets, commas
// and escaped quotes inside strings not counted; and the parse of a wide
// object costs under 6 times its text.
func TestContainersAreAllocatedOnceAtTheirLength(t *testing.T) {
	var wide strings.Builder
	wide.WriteByte('{')
	for i := range 20000 {
		if i > 0 {
			wide.WriteByte(',')
		}
		wide.WriteString(`"` + strconv.Itoa(i) + `":0`)
	}
	wide.WriteByte('}')
	for _, text := range []string{
		`{"a\"[,":[1, 2 ,{"b,":"]"}],"c":"\\","d":[],"e":{},"f":[[],[[1],2],{"g":"{"}]}`,
		`[true,false,null,-1.5e3,"x",[ ],{ }]`,
		wide.String(),
	} {
		tree, err := Parse([]byte(text), MaxDepth)
		if err != nil {
			t.Fatalf("%.40s: %v", text, err)
		}
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case []any:
				if cap(x) != len(x) {
					t.Errorf("%.40s: an array of %d elements has capacity %d", text, len(x), cap(x))
				}
				for _, e := range x {
					walk(e)
				}
			case Object:
				if cap(x) != len(x) {
					t.Errorf("%.40s: an object of %d members has capacity %d", text, len(x), cap(x))
				}
				for _, m := range x {
					walk(m.Value)
				}
			}
		}
		walk(tree)
	}
	data := []byte(wide.String())
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ParseLimited(data, MaxDepth, 1<<16)
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 6*uint64(len(data)) {
		t.Errorf("a wide object of %d bytes allocated %d bytes to parse (%dx, budget 6x)", len(data), got, got/uint64(len(data)))
	}
}
