package offlineschema

import (
	"errors"
	"regexp"
	"regexp/syntax"
)

// MaxPatternInsts caps the program of one regular expression a schema
// holds ("pattern", a "patternProperties" name, a "pattern" under
// "propertyNames") and of one string checked against "format": "regex".
// Go's regexp has no DFA: matching a string costs up to program size ×
// string length, and building the program costs its size in memory, so
// the cap bounds both per byte of input. Real schemas stay far below it:
// an anchored identifier pattern ("^[a-z0-9-]{1,63}$") is about 130
// instructions, a UUID pattern about 40, a common email pattern about
// 260, a full IPv6 address pattern about 700; 10,000 leaves room for the
// largest hand-written patterns, and what is left of the cost (program
// size × string length per match) is charged against MaxValidationCost
// (cost.go).
const MaxPatternInsts = 10000

// errPatternTooLarge is the cause of a pattern refused for its size.
var errPatternTooLarge = errors.New("offlineschema: regular expression program over MaxPatternInsts instructions")

// patternSizeCap saturates the size estimate: well over MaxPatternInsts,
// far from overflowing a product of two of them.
const patternSizeCap = int64(1) << 40

// PatternInsts returns an upper bound on the instructions of the program
// regexp.Compile builds for p (Perl syntax, as the schema library and
// Go's regexp read it), computed from the parse tree without expanding
// counted repeats, so a pattern such as "a{1000}a{1000}…" costs its text
// to measure, not the million instructions it would compile to. It
// errors when p does not parse. The bound is saturated (never overflows)
// and is exact for patterns without repeats but for a few instructions.
func PatternInsts(p string) (int, error) {
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

// CompilePattern compiles p as regexp.Compile does, after refusing a
// pattern whose program would exceed MaxPatternInsts (measured by
// PatternInsts, before anything is built). It returns the bound on the
// program size too, what one match costs per byte of the string. It is
// the one place this module compiles a regular expression from a schema
// or a peer.
func CompilePattern(p string) (*regexp.Regexp, int, error) {
	n, err := PatternInsts(p)
	if err != nil {
		return nil, 0, err
	}
	if n > MaxPatternInsts {
		return nil, n, errPatternTooLarge
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, n, err
	}
	return re, n, nil
}

// isBoundedRegex is the "regex" format of Compile's validator: a string
// is a regular expression when Go's regexp parses it and its program is
// within MaxPatternInsts. Unlike the library's own check
// (regexp.Compile of the peer's string) it builds no program, so a short
// string of nested counted repeats costs its length, not the millions of
// instructions it would compile to; a string over the cap is not a
// regex this agent accepts (4004 schema_violation, keyword "format").
// A value that is not a string is not this format's concern.
func isBoundedRegex(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true
	}
	n, err := PatternInsts(s)
	return err == nil && n <= MaxPatternInsts
}
