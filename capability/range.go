package capability

import (
	"slices"
	"strings"
)

// Limits of ranges (this project's caps).
const (
	// MaxRangeLen caps a range string in bytes.
	MaxRangeLen = 256
	// MaxComparators caps the comparators of one range.
	MaxComparators = 16
)

// op is a comparator operator.
type op uint8

const (
	opEQ op = iota // "=" or a bare version
	opGT           // ">"
	opGE           // ">="
	opLT           // "<"
	opLE           // "<="
)

type comparator struct {
	op op
	v  Version
}

// Range is a semver-range of the §4.4 subset: an exact version "x.y.z", or
// a comparator set of space-separated comparators that must all hold
// (">=1.2.0 <2.0.0"). A comparator is one of "=", ">", ">=", "<", "<="
// immediately followed by a strict SemVer 2.0.0 version; a bare version
// means "=".
//
// A Range is parsed once by ParseRange and keeps its string exactly.
// Contains does not allocate. The zero Range is not a range: it contains
// nothing, and IsZero reports it.
type Range struct {
	raw  string
	cmps []comparator
}

// ParseRange parses a range of the §4.4 subset. Refused with 4001:
//
//   - unsupported_range, the message naming the form: "||", wildcards
//     ("1.x", "1.X", "*", "1.2.*"), "~", "^", hyphen ranges
//     ("1.0.0 - 2.0.0"), "!=", commas, partial versions ("1.2"),
//     v-prefixed versions ("v1.2.3");
//   - invalid_range: the empty range, a range over MaxRangeLen bytes or
//     MaxComparators comparators, another operator, an operator without a
//     version, a version that is not strict SemVer 2.0.0.
//
// Comparators are separated by one or more spaces (U+0020); leading and
// trailing spaces are allowed. Messages never quote the input.
func ParseRange(s string) (Range, error) {
	if len(s) > MaxRangeLen {
		return Range{}, badRequest(ErrInvalidRange, "range is longer than %d bytes", MaxRangeLen)
	}
	if strings.Contains(s, "|") {
		return Range{}, unsupported("`||`")
	}
	if strings.Contains(s, ",") {
		return Range{}, unsupported("`,` (comma-separated comparators)")
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && (i == 0 || s[i-1] == ' ') {
			n++
		}
	}
	if n == 0 {
		return Range{}, badRequest(ErrInvalidRange, "range is empty")
	}
	if n > MaxComparators {
		return Range{}, badRequest(ErrInvalidRange, "range has more than %d comparators", MaxComparators)
	}
	r := Range{raw: s, cmps: make([]comparator, 0, n)}
	rest := s
	for rest != "" {
		var tok string
		tok, rest, _ = strings.Cut(rest, " ")
		if tok == "" {
			continue
		}
		c, err := parseComparator(tok)
		if err != nil {
			return Range{}, err
		}
		r.cmps = append(r.cmps, c)
	}
	return r, nil
}

func unsupported(form string) error {
	return badRequest(ErrUnsupportedRange, "range uses an unsupported form: %s", form)
}

// parseComparator parses one space-free comparator token.
func parseComparator(tok string) (comparator, error) {
	switch {
	case tok == "-":
		return comparator{}, unsupported("hyphen range (`a - b`)")
	case strings.HasPrefix(tok, "~"):
		return comparator{}, unsupported("`~`")
	case strings.HasPrefix(tok, "^"):
		return comparator{}, unsupported("`^`")
	case strings.HasPrefix(tok, "!"):
		return comparator{}, unsupported("`!=`")
	}
	c := comparator{op: opEQ}
	v := tok
	switch {
	case strings.HasPrefix(tok, ">="):
		c.op, v = opGE, tok[2:]
	case strings.HasPrefix(tok, "<="):
		c.op, v = opLE, tok[2:]
	case strings.HasPrefix(tok, ">"):
		c.op, v = opGT, tok[1:]
	case strings.HasPrefix(tok, "<"):
		c.op, v = opLT, tok[1:]
	case strings.HasPrefix(tok, "="):
		c.op, v = opEQ, tok[1:]
	}
	if v == "" {
		return comparator{}, badRequest(ErrInvalidRange, "range has an operator without a version")
	}
	switch v[0] {
	case '=', '<', '>', '~', '^', '!':
		return comparator{}, badRequest(ErrInvalidRange, "range has an unsupported operator")
	case 'v', 'V':
		return comparator{}, unsupported("v-prefixed version")
	}
	core := v
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	parts := strings.Split(core, ".")
	for _, p := range parts {
		if p == "x" || p == "X" || p == "*" {
			return comparator{}, unsupported("wildcard (`x`, `X`, `*`)")
		}
	}
	if len(parts) < 3 && allNumeric(parts) {
		return comparator{}, unsupported("partial version (major.minor.patch required)")
	}
	ver, why := parseVersion(v)
	if why != "" {
		return comparator{}, badRequest(ErrInvalidRange, "range has a version that %s", why)
	}
	c.v = ver
	return c, nil
}

func allNumeric(parts []string) bool {
	for _, p := range parts {
		if !numeric(p) {
			return false
		}
	}
	return true
}

// String returns the range exactly as parsed ("" for the zero Range).
func (r Range) String() string { return r.raw }

// IsZero reports whether r is the zero Range.
func (r Range) IsZero() bool { return len(r.cmps) == 0 }

// Contains reports whether v satisfies every comparator of r, by SemVer
// precedence (build metadata ignored, so "=1.2.3" contains "1.2.3+b.7").
//
// Prerelease rule (npm's convention): a version with a prerelease satisfies
// r only if at least one comparator of r carries a prerelease on the same
// major.minor.patch. So ">=1.2.3-alpha <2.0.0" contains "1.2.3-beta" but not
// "1.3.0-beta", and ">=1.0.0" never contains "2.0.0-rc.1". Without a
// prerelease, comparisons are plain precedence.
//
// The zero Range contains nothing. Contains does not allocate.
func (r Range) Contains(v Version) bool { return r.contains(&v) }

func (r *Range) contains(v *Version) bool {
	if len(r.cmps) == 0 || v.IsZero() {
		return false
	}
	if v.pre != "" {
		admitted := false
		for i := range r.cmps {
			if c := &r.cmps[i]; c.v.pre != "" && c.v.sameCore(v) {
				admitted = true
				break
			}
		}
		if !admitted {
			return false
		}
	}
	for i := range r.cmps {
		c := &r.cmps[i]
		d := compareVersions(v, &c.v)
		var ok bool
		switch c.op {
		case opEQ:
			ok = d == 0
		case opGT:
			ok = d > 0
		case opGE:
			ok = d >= 0
		case opLT:
			ok = d < 0
		case opLE:
			ok = d <= 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// anyContained reports whether some range of rs contains some version of
// vs, as rs[i].Contains(vs[j]) for some i, j, without trying every pair.
// It sorts vs by precedence in place when it is not sorted already.
//
// The idea: over versions sorted by precedence, the versions a comparator
// holds for are a prefix (<, <=) or a suffix (>, >=), and "=" both, so the
// versions every comparator of a range holds for are one index span
// [lo, hi), found with one binary search per comparator. A version of the
// span without a prerelease is contained. One with a prerelease is
// contained only if a comparator of the range carries a prerelease on its
// major.minor.patch (Contains' prerelease rule); the prereleases of one
// core are themselves a span, found by binary search per such comparator.
// Cost: n·log n to sort n versions once, then, per range,
// O(MaxComparators·log n).
func anyContained(rs []Range, vs []Version) bool {
	if len(rs) == 0 || len(vs) == 0 {
		return false
	}
	byPrecedence := func(a, b Version) int { return compareVersions(&a, &b) }
	if !slices.IsSortedFunc(vs, byPrecedence) {
		slices.SortFunc(vs, byPrecedence)
	}
	// The zero Version sorts as 0.0.0 but is contained in nothing: drop it.
	vs = slices.DeleteFunc(vs, Version.IsZero)
	n := len(vs)
	// releases[i] counts the versions of vs[:i] without a prerelease.
	releases := make([]int, n+1)
	for i := range vs {
		releases[i+1] = releases[i]
		if vs[i].pre == "" {
			releases[i+1]++
		}
	}
	// first returns the least index i with after(vs[i]) (false for a
	// prefix of vs, true for the rest), or n.
	first := func(after func(v *Version) bool) int {
		lo, hi := 0, n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if after(&vs[m]) {
				hi = m
			} else {
				lo = m + 1
			}
		}
		return lo
	}
	for ri := range rs {
		r := &rs[ri]
		if r.IsZero() {
			continue
		}
		lo, hi := 0, n
		for ci := range r.cmps {
			c := &r.cmps[ci]
			geq := first(func(v *Version) bool { return compareVersions(v, &c.v) >= 0 })
			gt := first(func(v *Version) bool { return compareVersions(v, &c.v) > 0 })
			switch c.op {
			case opEQ:
				lo, hi = max(lo, geq), min(hi, gt)
			case opGT:
				lo = max(lo, gt)
			case opGE:
				lo = max(lo, geq)
			case opLT:
				hi = min(hi, geq)
			case opLE:
				hi = min(hi, gt)
			}
		}
		if lo >= hi {
			continue
		}
		if releases[hi] > releases[lo] {
			return true
		}
		for ci := range r.cmps {
			c := &r.cmps[ci]
			if c.v.pre == "" {
				continue
			}
			// The prereleases of c's core: from the first version whose
			// core is not below it to the first one that is c's release
			// or above.
			from := first(func(v *Version) bool { return compareCore(v, &c.v) >= 0 })
			to := first(func(v *Version) bool {
				k := compareCore(v, &c.v)
				return k > 0 || k == 0 && v.pre == ""
			})
			if max(lo, from) < min(hi, to) {
				return true
			}
		}
	}
	return false
}

// compareCore compares the major.minor.patch of v and w.
func compareCore(v, w *Version) int {
	if c := cmpUint(v.major, w.major); c != 0 {
		return c
	}
	if c := cmpUint(v.minor, w.minor); c != 0 {
		return c
	}
	return cmpUint(v.patch, w.patch)
}
