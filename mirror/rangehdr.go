package mirror

import (
	"strconv"
	"strings"
)

// RangeResult says what to do with a Range header.
type RangeResult uint8

// Outcomes of ParseRange.
const (
	// RangeIgnore: no Range, or one this server does not honour (several
	// ranges, another unit, bad syntax): serve the whole file (RFC 9110
	// §14.2 lets a server ignore Range).
	RangeIgnore RangeResult = iota
	// RangePartial: serve [Start, Start+Length) with 206.
	RangePartial
	// RangeUnsatisfiable: 416 with Content-Range: bytes */size.
	RangeUnsatisfiable
)

// maxRangeHeader bounds the Range header looked at.
const maxRangeHeader = 128

// ParseRange interprets one "bytes=" range of RFC 9110 §14.1.2 over a file
// of size bytes: "a-b", "a-" or "-n". Anything else is RangeIgnore.
func ParseRange(h string, size int64) (start, length int64, res RangeResult) {
	if h == "" || len(h) > maxRangeHeader {
		return 0, 0, RangeIgnore
	}
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, RangeIgnore
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, RangeIgnore
	}
	if first == "" { // suffix: the last n bytes
		n, ok := digits(last)
		if !ok {
			return 0, 0, RangeIgnore
		}
		if n == 0 || size == 0 {
			return 0, 0, RangeUnsatisfiable
		}
		n = min(n, size)
		return size - n, n, RangePartial
	}
	a, ok := digits(first)
	if !ok {
		return 0, 0, RangeIgnore
	}
	b := size - 1
	if last != "" {
		v, ok := digits(last)
		if !ok || v < a {
			return 0, 0, RangeIgnore
		}
		b = min(v, size-1)
	}
	if a >= size {
		return 0, 0, RangeUnsatisfiable
	}
	return a, b - a + 1, RangePartial
}

// digits parses 1 to 18 decimal digits (no sign, no spaces).
func digits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}
