package offlineschema

import (
	"errors"
	"math"
	"regexp"
	"regexp/syntax"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxPatternInsts caps the program of one regular expression a schema
// holds ("pattern", a "patternProperties" name, a "pattern" under
// "propertyNames") and of one string checked against "format": "regex".
// Go's regexp has no DFA: matching a string costs up to program size ×
// string length, and building the program costs its size in memory
// (besides its character classes: MaxPatternRanges), so the cap bounds
// both per byte of input. Real schemas stay far below it:
// an anchored identifier pattern ("^[a-z0-9-]{1,63}$") is about 130
// instructions, a UUID pattern about 40, a common email pattern about
// 260, a full IPv6 address pattern about 700; 10,000 leaves room for the
// largest hand-written patterns, and what is left of the cost (program
// size × string length per match) is charged against MaxValidationCost
// (cost.go).
const MaxPatternInsts = 10000

// errPatternTooLarge is the cause of a pattern refused for its size.
var errPatternTooLarge = errors.New("offlineschema: regular expression over MaxPatternInsts instructions or MaxPatternRanges class ranges")

// patternSizeCap saturates the size estimate: well over MaxPatternInsts,
// far from overflowing a product of two of them, and within an int where
// an int has 32 bits (2^40 there did not compile, and a saturated size
// converted to int would have wrapped to 0: a cost under every limit).
const patternSizeCap = min(int64(1)<<40, math.MaxInt)

// PatternInsts returns an upper bound on the instructions of the program
// regexp.Compile builds for p (Perl syntax, as the schema library and
// Go's regexp read it), computed from the parse tree without expanding
// counted repeats, so a pattern such as "a{1000}a{1000}…" costs its text
// to measure, not the million instructions it would compile to. It
// errors when p does not parse. The bound is saturated (never overflows)
// and is exact for patterns without repeats but for a few instructions.
//
// Parsing itself can cost far more than the text: each \pL copies a
// Unicode table, a case-folded range is expanded rune by rune. A pattern
// whose parse would build more than MaxPatternRanges ranges
// (patternParseRanges, read from the text) is not parsed: PatternInsts
// errors (errPatternTooLarge).
func PatternInsts(p string) (int, error) {
	if patternParseRanges(p) > MaxPatternRanges {
		return 0, errPatternTooLarge
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return 0, err
	}
	// The compiler adds a fail instruction, the match, and capture 0.
	return int(min(progSize(re)+4, patternSizeCap)), nil
}

// progSize bounds the instructions syntax.Compile emits for re after
// Simplify (which writes x{n,m} out as n copies of x and m-n nested
// optional copies), saturated at patternSizeCap. It follows regexp/syntax's
// own estimate (the parser's calcSize).
func progSize(re *syntax.Regexp) int64 {
	var size int64
	switch re.Op {
	case syntax.OpLiteral:
		size = int64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		size = 2 + progSize(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + progSize(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			size = min(size+progSize(sub), patternSizeCap)
		}
		if re.Op == syntax.OpAlternate && len(re.Sub) > 1 {
			size += int64(len(re.Sub)) - 1
		}
	case syntax.OpRepeat:
		sub := progSize(re.Sub[0])
		switch {
		case re.Max == -1 && re.Min == 0: // x*
			size = 2 + sub
		case re.Max == -1: // x{n,} = x{n-1}x+
			size = 1 + min(int64(re.Min)*sub, patternSizeCap)
		default: // x{n,m} = x{n}(x(x)?)? …
			size = min(int64(re.Max)*sub, patternSizeCap) + int64(re.Max-re.Min)
		}
	}
	return min(max(1, size), patternSizeCap)
}

// MaxPatternRanges caps the character-class ranges (pairs of runes)
// compiling one regular expression builds, beyond its instructions:
// those its parse appends (every \p table it reads, every case-folded
// rune it expands: patternParseRanges), and those Go's regexp copies into
// the one-pass form it also builds for an anchored pattern of under 1,000
// instructions (the character class of every instruction, and of every
// alternation the union of its branches': onePassRanges). "^\pL{990}$"
// (13 bytes, 995 instructions) is 650,000 ranges there: 8 MB and 90 ms.
// A range costs 12 to 24 bytes and about 0.1 µs, so the cap is 2 to 5 MB
// and 20 ms; a Unicode identifier pattern ("^[\pL_][\pL\pN_]{0,63}$")
// is about 100,000, an ASCII one ("^[a-z0-9-]{1,63}$") 650.
const MaxPatternRanges = 200000

// PatternCost is what compiling one regular expression costs, measured
// by MeasurePattern before regexp.Compile builds anything.
type PatternCost struct {
	// Insts bounds the instructions of the program (PatternInsts): what
	// one match costs per byte of the string.
	Insts int
	// Ranges bounds the character-class ranges the compile builds beyond
	// the instructions (MaxPatternRanges).
	Ranges int
}

// Over reports whether c is over one of the caps on one pattern.
func (c PatternCost) Over() bool {
	return c.Insts > MaxPatternInsts || c.Ranges > MaxPatternRanges
}

// MeasurePattern returns the cost of compiling p: the text is read for
// the ranges its parse builds first (a pattern over MaxPatternRanges
// there is not parsed), then its program is measured from the parse tree
// (PatternInsts), and only a program within MaxPatternInsts is built
// (without its one-pass form) to bound the one-pass copy. It errors when
// p does not parse or c is over a cap (errPatternTooLarge); c holds what
// was measured up to there.
func MeasurePattern(p string) (c PatternCost, err error) {
	c.Ranges = patternParseRanges(p)
	if c.Ranges > MaxPatternRanges {
		return c, errPatternTooLarge
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return c, err
	}
	// The compiler adds a fail instruction, the match, and capture 0.
	c.Insts = int(min(progSize(re)+4, patternSizeCap))
	if c.Insts > MaxPatternInsts {
		return c, errPatternTooLarge
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return c, err
	}
	c.Ranges += onePassRanges(prog, MaxPatternRanges-c.Ranges)
	if c.Over() {
		return c, errPatternTooLarge
	}
	return c, nil
}

// CompilePattern compiles p as regexp.Compile does, after measuring it
// (MeasurePattern) and refusing a pattern over MaxPatternInsts or
// MaxPatternRanges before anything is built. It returns the bound on the
// program's instructions too, what one match costs per byte of the
// string. It is CompilePatternWithin without a budget.
func CompilePattern(p string) (*regexp.Regexp, int, error) {
	re, c, err := CompilePatternWithin(p, nil)
	return re, c.Insts, err
}

// CompilePatternWithin is CompilePattern for a caller with a budget:
// admit, when not nil, is called with the measured cost before the
// program is built, and false stops there (errPatternNotAdmitted), so the
// caller charges the compile first. It is the one place this module
// compiles a regular expression from a schema or a peer.
func CompilePatternWithin(p string, admit func(PatternCost) bool) (*regexp.Regexp, PatternCost, error) {
	c, err := MeasurePattern(p)
	if err != nil {
		return nil, c, err
	}
	if admit != nil && !admit(c) {
		return nil, c, errPatternNotAdmitted
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, c, err
	}
	return re, c, nil
}

// errPatternNotAdmitted: CompilePatternWithin's caller refused the cost.
var errPatternNotAdmitted = errors.New("offlineschema: regular expression compile refused by the caller's budget")

// isBoundedRegex is the "regex" format of Compile's validator: a string
// is a regular expression when Go's regexp parses it, its parse builds at
// most MaxPatternRanges ranges and its program is within MaxPatternInsts.
// Unlike the library's own check (regexp.Compile of the peer's string) it
// builds no program, so a short string of nested counted repeats costs
// its length, not the millions of instructions it would compile to; a
// string over a cap is not a regex this agent accepts (4004
// schema_violation, keyword "format"). A value that is not a string is
// not this format's concern.
func isBoundedRegex(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true
	}
	n, err := PatternInsts(s)
	return err == nil && n <= MaxPatternInsts
}

// Bounds of regexp/syntax's case folding (the parser's minFold and
// maxFold): a case-folded class range is expanded rune by rune between
// them.
const (
	minFold = 0x0041
	maxFold = 0x1e943
)

// asciiGroupRanges bounds what a Perl (\d, \w, \s and their negations)
// or POSIX ([:alpha:]) class adds to a parse: a few ASCII ranges, or
// under case folding each of its letters (at most 64 runes).
const asciiGroupRanges = 64

// unicodeClassRanges bounds what one \p or \P class adds to a parse:
// the parser appends the table (a range per stride-1 entry, a range per
// rune of the others), under case folding its fold table too, negated one
// more; computed once from the tables regexp/syntax reads (the general
// categories and scripts, and their fold tables).
var unicodeClassRanges = sync.OnceValue(func() int {
	work := func(t *unicode.RangeTable) int {
		n := 0
		for _, r := range t.R16 {
			if r.Stride == 1 {
				n++
			} else {
				n += int((r.Hi-r.Lo)/r.Stride) + 1
			}
		}
		for _, r := range t.R32 {
			if r.Stride == 1 {
				n++
			} else {
				n += int((r.Hi-r.Lo)/r.Stride) + 1
			}
		}
		return n
	}
	most := work(unicode.Cn) // \p{Assigned} is Cn negated
	for _, m := range []map[string]*unicode.RangeTable{unicode.Categories, unicode.Scripts, unicode.FoldCategory, unicode.FoldScript} {
		for _, t := range m {
			most = max(most, work(t))
		}
	}
	return 2*most + 2
})

// patternParseRanges bounds, from the text alone, the ranges regexp/syntax
// appends while parsing p, at least 1 a byte: unicodeClassRanges for
// every \p or \P, and, when the pattern can turn case folding on (a
// flag group with i), asciiGroupRanges for every Perl or POSIX class and
// the runes of every class range within the folding bounds (the parser
// expands "(?i)[B-\x{1e942}]" rune by rune: 125,000 for 15 bytes). It
// reads classes as the parser does; where the parser would stop on an
// error, it stops too.
func patternParseRanges(p string) int {
	fold := mayFold(p)
	// The last ":]" of p: the parser looks for one from every "[:" in a
	// class, reading the rest of the pattern when there is none.
	lastPosix := lastIndex(p, ":]")
	n := len(p)
	add := func(k int) { n = min(n+k, int(patternSizeCap)) }
	for i := 0; i < len(p); {
		switch p[i] {
		case '\\':
			if i+1 >= len(p) {
				return n
			}
			switch c := p[i+1]; {
			case c == 'Q':
				// Literal text up to \E: nothing is a class there.
				end := indexFrom(p, i+2, `\E`)
				if end < 0 {
					return n
				}
				i = end + 2
				continue
			case c == 'p' || c == 'P':
				add(unicodeClassRanges())
			case fold && isPerlClass(c):
				add(asciiGroupRanges)
			}
			i += 2
		case '[':
			k, ok := classParseRanges(p, i+1, fold, lastPosix)
			add(k.ranges)
			if !ok {
				return n
			}
			i = k.end
		default:
			i++
		}
	}
	return n
}

// mayFold reports whether p holds a flag group that can turn case
// folding on ("(?i)", "(?mi:", …); anywhere, also where it is literal:
// the bound only grows.
func mayFold(p string) bool {
	for i := 0; i+2 < len(p); i++ {
		if p[i] != '(' || p[i+1] != '?' {
			continue
		}
		for j := i + 2; j < len(p); j++ {
			c := p[j]
			if c == 'i' {
				return true
			}
			if c != 'm' && c != 's' && c != 'U' && c != '-' {
				break
			}
		}
	}
	return false
}

func isPerlClass(c byte) bool {
	switch c {
	case 'd', 'D', 's', 'S', 'w', 'W':
		return true
	}
	return false
}

func lastIndex(s, sub string) int {
	for i := len(s) - len(sub); i >= 0; i-- {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func indexFrom(s string, from int, sub string) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// classScan is where a class body ends (after its "]") and the ranges
// its parse appends beyond one a byte.
type classScan struct {
	end, ranges int
}

// classParseRanges reads the class body of p from i (after "[") as
// regexp/syntax's parseClass does, and bounds the ranges its parse
// appends (and the bytes it reads again: a "[:" with no ":]" after it
// makes the parser read the rest of the pattern, "[[:[:[:…" is
// quadratic); ok is false where the parser would fail (or the text
// ends). lastPosix is the last ":]" of p (-1: none).
func classParseRanges(p string, i int, fold bool, lastPosix int) (k classScan, ok bool) {
	if i < len(p) && p[i] == '^' {
		i++
	}
	first := true
	for i >= len(p) || p[i] != ']' || first {
		if i >= len(p) {
			return classScan{end: i, ranges: k.ranges}, false
		}
		first = false
		t := p[i:]
		// POSIX [:name:]: the parser looks for ":]" from here.
		if len(t) > 2 && t[0] == '[' && t[1] == ':' {
			if lastPosix < i+2 {
				k.ranges += len(t) // read to the end, not found
			} else if j := indexFrom(t, 2, ":]"); j >= 0 {
				if fold {
					k.ranges += asciiGroupRanges
				}
				i += j + 2
				continue
			}
		}
		if len(t) >= 2 && t[0] == '\\' {
			switch c := t[1]; {
			case c == 'p' || c == 'P':
				k.ranges += unicodeClassRanges()
				// The name: one letter, or up to "}".
				if len(t) >= 3 && t[2] == '{' {
					j := indexFrom(t, 3, "}")
					if j < 0 {
						return classScan{end: len(p), ranges: k.ranges}, false
					}
					i += j + 1
				} else {
					_, size := utf8.DecodeRuneInString(t[min(2, len(t)):])
					i += 2 + size
				}
				continue
			case isPerlClass(c):
				if fold {
					k.ranges += asciiGroupRanges
				}
				i += 2
				continue
			}
		}
		lo, size, ok := classChar(t)
		if !ok {
			return classScan{end: i, ranges: k.ranges}, false
		}
		i += size
		hi := lo
		if len(p)-i >= 2 && p[i] == '-' && p[i+1] != ']' {
			hi, size, ok = classChar(p[i+1:])
			if !ok {
				return classScan{end: i, ranges: k.ranges}, false
			}
			i += 1 + size
		}
		if fold && hi >= lo {
			if a, b := max(lo, minFold), min(hi, maxFold); b >= a && !(lo <= minFold && hi >= maxFold) {
				k.ranges += int(b-a) + 1
			}
		}
	}
	return classScan{end: i + 1, ranges: k.ranges}, true
}

// classChar reads one character of a class as regexp/syntax's
// parseClassChar does (a rune, or an escape of its parseEscape), and
// its length in bytes; ok is false where the parser fails.
func classChar(t string) (r rune, size int, ok bool) {
	if t == "" {
		return 0, 0, false
	}
	if t[0] != '\\' {
		r, size = utf8.DecodeRuneInString(t)
		return r, size, true
	}
	if len(t) < 2 {
		return 0, 0, false
	}
	c := t[1]
	switch {
	case c >= '1' && c <= '7' && (len(t) < 3 || t[2] < '0' || t[2] > '7'):
		return 0, 0, false // a backreference
	case c >= '0' && c <= '7':
		r, size = rune(c-'0'), 2
		for size < 4 && size < len(t) && t[size] >= '0' && t[size] <= '7' {
			r = r*8 + rune(t[size]-'0')
			size++
		}
		return r, size, true
	case c == 'x':
		if len(t) >= 3 && t[2] == '{' {
			for j := 3; j < len(t); j++ {
				if t[j] == '}' {
					if j == 3 {
						return 0, 0, false
					}
					return r, j + 1, true
				}
				v := unhexDigit(t[j])
				if v < 0 {
					return 0, 0, false
				}
				r = r*16 + v
				if r > unicode.MaxRune {
					return 0, 0, false
				}
			}
			return 0, 0, false
		}
		if len(t) < 4 || unhexDigit(t[2]) < 0 || unhexDigit(t[3]) < 0 {
			return 0, 0, false
		}
		return unhexDigit(t[2])*16 + unhexDigit(t[3]), 4, true
	case c == 'a' || c == 'f' || c == 'n' || c == 'r' || c == 't' || c == 'v':
		return rune(c), 2, true // a control character: far below the folding bounds
	case c < utf8.RuneSelf && !isAlnum(c):
		return rune(c), 2, true
	}
	return 0, 0, false
}

func unhexDigit(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
}

// onePassRanges bounds the ranges Go's regexp copies into the one-pass
// form of prog (compileOnePass of the standard library's regexp),
// stopping once over limit: 0 when prog cannot be one-pass
// (not anchored at the start, 1,000 instructions or more, a match not
// at the end of the text). Otherwise it replays makeOnePass with the
// sizes of the rune sets in place of the sets, on the program as
// onePassCopy rewrites it: each visit of an instruction costs 1 and the
// size of its set (an alternation merges its branches', an empty-width
// or capture instruction copies its successor's, a rune instruction
// holds its class), every round (a visit from each instruction that
// follows a rune) anew, as the library redoes them. A failed merge stops
// the library earlier; this bound does not need to know.
func onePassRanges(prog *syntax.Prog, limit int) int {
	insts := prog.Inst
	n := len(insts)
	if prog.Start == 0 || n >= 1000 {
		return 0
	}
	if s := insts[prog.Start]; s.Op != syntax.InstEmptyWidth || syntax.EmptyOp(s.Arg)&syntax.EmptyBeginText == 0 {
		return 0
	}
	hasAlt := false
	for _, in := range insts {
		if in.Op == syntax.InstAlt || in.Op == syntax.InstAltMatch {
			hasAlt = true
			break
		}
	}
	for _, in := range insts {
		opOut := insts[in.Out].Op
		switch in.Op {
		default:
			if opOut == syntax.InstMatch && hasAlt {
				return 0
			}
		case syntax.InstAlt, syntax.InstAltMatch:
			if opOut == syntax.InstMatch || insts[in.Arg].Op == syntax.InstMatch {
				return 0
			}
		case syntax.InstEmptyWidth:
			if opOut == syntax.InstMatch && syntax.EmptyOp(in.Arg)&syntax.EmptyEndText == 0 {
				return 0
			}
		}
	}
	// onePassCopy's rewrites of the alternation edges.
	out := make([]uint32, n)
	arg := make([]uint32, n)
	for pc, in := range insts {
		out[pc], arg[pc] = in.Out, in.Arg
	}
	isAlt := func(pc uint32) bool {
		return insts[pc].Op == syntax.InstAlt || insts[pc].Op == syntax.InstAltMatch
	}
	for pc := range insts {
		if !isAlt(uint32(pc)) {
			continue
		}
		pAOther, pAAlt := &out[pc], &arg[pc]
		if !isAlt(*pAAlt) {
			pAAlt, pAOther = pAOther, pAAlt
			if !isAlt(*pAAlt) {
				continue
			}
		}
		if isAlt(*pAOther) {
			continue
		}
		b := *pAAlt
		pBAlt, pBOther := &out[b], &arg[b]
		patch := false
		if out[b] == uint32(pc) {
			patch = true
		} else if arg[b] == uint32(pc) {
			patch = true
			pBAlt, pBOther = pBOther, pBAlt
		}
		if patch {
			*pBAlt = *pAOther
		}
		if *pAOther == *pBAlt {
			*pAAlt = *pBOther
		}
	}
	size := make([]int, n)
	done := make([]bool, n)   // a rune instruction's set is built
	visited := make([]int, n) // the round that last visited it
	queued := make([]bool, n) // ever put on the queue
	queue := []uint32{uint32(prog.Start)}
	queued[prog.Start] = true
	cost := 0
	round := 0
	var check func(pc uint32)
	check = func(pc uint32) {
		if visited[pc] == round || cost > limit {
			return
		}
		visited[pc] = round
		cost++
		in := &insts[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			check(out[pc])
			check(arg[pc])
			size[pc] = min(size[out[pc]]+size[arg[pc]], int(patternSizeCap))
		case syntax.InstCapture, syntax.InstNop, syntax.InstEmptyWidth:
			check(out[pc])
			size[pc] = size[out[pc]]
		case syntax.InstMatch, syntax.InstFail:
			return
		default: // the rune instructions
			if done[pc] {
				return
			}
			done[pc] = true
			if o := out[pc]; !queued[o] {
				queued[o] = true
				queue = append(queue, o)
			}
			size[pc] = runeSetRanges(in)
		}
		cost = min(cost+size[pc], int(patternSizeCap))
	}
	for q := 0; q < len(queue) && cost <= limit; q++ {
		round++
		check(queue[q])
	}
	return cost
}

// runeSetRanges is the size of the rune set makeOnePass gives a rune
// instruction: its class, or a case-folded rune's orbit.
func runeSetRanges(in *syntax.Inst) int {
	switch in.Op {
	case syntax.InstRuneAny:
		return 1
	case syntax.InstRuneAnyNotNL:
		return 2
	}
	if len(in.Rune) == 1 && syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
		k := 1
		for r := unicode.SimpleFold(in.Rune[0]); r != in.Rune[0]; r = unicode.SimpleFold(r) {
			k++
		}
		return k
	}
	return (len(in.Rune) + 1) / 2
}
