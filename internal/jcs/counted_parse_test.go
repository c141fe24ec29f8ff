package jcs

// Third review of internal/jcs (commit e1b7597, the parser that allocates
// each container once at the length a pre-scan of the text counts). The
// parser before that commit is copied at the end of this file as
// prevParseLimited, the reference of the differential tests.

import (
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// allocOf returns the bytes f allocates.
func allocOf(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// nestedThenCommas is levels objects ({"":{"":...) opened one inside the
// other, the innermost followed at once by commas, then each level closed
// and followed by perLevel commas: the parse refuses it at the first comma
// (no value between "{" and ","), after opening every level; the pre-scan
// counts each level's commas as members.
func nestedThenCommas(open string, levels, perLevel int) []byte {
	var b strings.Builder
	for i := range levels {
		if i > 0 {
			b.WriteString(open[1:])
		}
		b.WriteByte(open[0])
	}
	closer := byte('}')
	if open[0] == '[' {
		closer = ']'
	}
	for range levels {
		b.WriteString(strings.Repeat(",", perLevel))
		b.WriteByte(closer)
	}
	return []byte(b.String())
}

// TestRefusedTextReservesNoCapacityFromCommasTheParseNeverReaches: the
// pre-scan counts every comma of a container as a member, up to its
// close, whatever the parse will meet first. A text the parse refuses at
// its first comma ({"":{"":...{ then commas, 16 levels opened) had each
// level allocated at 65,535 members (32 bytes each, capped only by the
// values still allowed): a 1 MiB card or AGH document cost 33 times its
// size to refuse (the parser before e1b7597: 1 time), beyond A2A-9's
// "about 10 times" and AGH-8's "under 6 times the text", per request.
// The counts of a text are only to be trusted when the text is valid:
// e.g. size nothing (sizes nil) unless json.Valid(data) (no allocation),
// or validate the grammar in the first scan.
func TestRefusedTextReservesNoCapacityFromCommasTheParseNeverReaches(t *testing.T) {
	for _, c := range []struct {
		name      string
		data      []byte
		maxValues int
	}{
		// At a2acard.MaxCardValues / agh.MaxDocumentValues and 1 MiB
		// (MaxCardBytes, MaxDocumentBytes).
		{"16 objects of commas, bounded", nestedThenCommas(`{"":`, 16, 65535), 1 << 16},
		{"16 arrays of commas, bounded", nestedThenCommas(`[`, 16, 65535), 1 << 16},
		{"one object of commas, unbounded Parse", nestedThenCommas(`{"":`, 1, 1<<20), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err, prevErr error
			got := allocOf(func() { _, err = ParseLimited(c.data, MaxDepth, c.maxValues) })
			prev := allocOf(func() { _, prevErr = prevParseLimited(c.data, MaxDepth, c.maxValues) })
			if !errors.Is(err, ErrMalformed) || !errors.Is(prevErr, ErrMalformed) {
				t.Fatalf("not refused as malformed: %v (before e1b7597: %v)", err, prevErr)
			}
			if budget := 10 * uint64(len(c.data)); got > budget {
				t.Errorf("a %d-byte text refused at its first comma allocated %d bytes (%.0fx; before e1b7597 %.0fx; budget 10x)",
					len(c.data), got, float64(got)/float64(len(c.data)), float64(prev)/float64(len(c.data)))
			}
		})
	}
}

// countedParseCheck parses in with the new and the previous parser and fails
// when they disagree on the error or the tree, or when an accepted tree
// holds a container whose capacity is not its length.
func countedParseCheck(t *testing.T, in []byte, depth, maxValues int) {
	t.Helper()
	got, err := ParseLimited(in, depth, maxValues)
	want, prevErr := prevParseLimited(in, depth, maxValues)
	if (err == nil) != (prevErr == nil) || err != nil && err.Error() != prevErr.Error() {
		t.Fatalf("%.80q (depth %d, values %d): error %v, before e1b7597 %v", in, depth, maxValues, err, prevErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.80q: tree %#v, before e1b7597 %#v", in, got, want)
	}
	// The digest and signing input (AppendCanonicalWithout) are what
	// Marshal writes of the object without the member, as before.
	if o, ok := got.(Object); ok {
		skips := []string{"", "proof", "digest"}
		for _, m := range o[:min(len(o), 4)] {
			skips = append(skips, m.Name)
		}
		for _, skip := range skips {
			w, werr := AppendCanonicalWithout([]byte("ctx\x00"), o, skip)
			m, merr := Marshal(o.Without(skip))
			if (werr == nil) != (merr == nil) || werr == nil && string(w) != "ctx\x00"+string(m) {
				t.Fatalf("%.80q without %q: %q (%v), Marshal of Without: %q (%v)", in, skip, w, werr, m, merr)
			}
		}
	}
	if depth > MaxDepth+1 {
		return // deeper containers are not pre-sized (documented)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			if cap(x) != len(x) {
				t.Fatalf("%.80q: an array of %d has capacity %d", in, len(x), cap(x))
			}
			for _, e := range x {
				walk(e)
			}
		case Object:
			if cap(x) != len(x) {
				t.Fatalf("%.80q: an object of %d has capacity %d", in, len(x), cap(x))
			}
			for _, m := range x {
				walk(m.Value)
			}
		}
	}
	walk(got)
}

// countedParseTexts are texts aimed at the pre-scan's string skipping, its
// depth stack and its counts, and at the number grammar.
func countedParseTexts() []string {
	deep := func(n int, open, inner, close string) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	return []string{
		`["\"",1,2]`, `["\\",[1,2],3]`, `{"a\"[,{":[1,2],"b":"\\"}`,
		`["\u0022,[,{",1]`, `["\u0022",[1,2,3]]`, `{"\u0022":{"x,":"]}"}}`,
		`["\\\"",[1],2]`, `["[[[{{{,,,",[],{}]`, `["\/\b\f\n\r\t",[1,[2,[3]]]]`,
		`[1,"abc`, `[1,"abc\"]`, `["a\`, `[[1,2],"x\"],[3,4,5]]`, `[[1,2],"x` + "\x01" + `",[3,4]]`,
		"[\"\x01\",[1,2]]", "[\"\xff\",[1,2]]", "[\"\xed\xa0\x80\",[1]]",
		`["\ud800",[1,2]]`, `["\ud800\udc00",[1,2]]`, `["\udc00",[1]]`, `["\u00",[1]]`,
		`[1,,2]`, `[,1]`, `[1,]`, `{,}`, `{"a":1,}`, `[}`, `{]`, `[1,2]]`, `[[1,2]`, `]`, `[`, `,`,
		`[1,2] [3,4,5]`, `[1,2],`, `{"a":1}{"b":[1,2,3]}`, `{"a" [1,2]}`, `{"a":1 "b":2}`,
		`{"a":1,"a":[1,2,3]}`, `{"":[],"":{}}`, `{"a":{"b":1,"b":2},"c":[1,2,3]}`,
		deep(MaxDepth, "[", "1", "]"), deep(MaxDepth+1, "[", "1", "]"), deep(MaxDepth+2, "[", "1", "]"),
		deep(MaxDepth+3, "[", "[1,2,3]", "]"), deep(40, "[", "", "]") + ",[1,2,3]",
		deep(MaxDepth, `{"a":`, "[1,2]", "}"), deep(MaxDepth+1, `{"a":`, "[1,2]", "}"),
		"[" + deep(MaxDepth+5, "[", "1,2", "]") + ",1,2,3]",
		`-0`, `[-0,0,-0.0,0e0,-0E-0]`, `1E400`, `-1E400`, `1e-400`, `[01]`, `[-01]`, `[.5]`, `[5.]`,
		`[-]`, `[1e]`, `[1e+]`, `[+1]`, `[0x1]`, `[1.5e308,1.8e308]`, `[NaN]`, `[Infinity]`,
		`[` + strings.Repeat("9", 5000) + `]`, `[0.` + strings.Repeat("0", 5000) + `1]`,
		`[1` + strings.Repeat("0", 400) + `]`, `[1,2,3,4,5,6,7,8,9,0]`, `{"a":0,"b":9,"c":-1}`,
		`[tru]`, `[true,fals]`, `[nul,1]`, `[null,true,false]`, ` [ 1 , [ ] , { } ] `, "\t[\n1\r]\n",
		`[[[],[[]],{}],{"a":[{}]}]`, `[{"a":[1,{"b":[2,{"c":3}]}]},4]`,
	}
}

// TestParserAgreesWithTheOneBeforeCountedAllocation: on texts aimed at the
// pre-scan (escaped quotes, \u0022, brackets and commas inside strings,
// unterminated strings, invalid UTF-8, nesting around MaxDepth, syntax
// errors before commas) and at the number grammar, the parser accepts and
// refuses what the one before e1b7597 did, with the same tree, each
// container at its exact length, under value bounds that cut each text.
func TestParserAgreesWithTheOneBeforeCountedAllocation(t *testing.T) {
	for _, text := range countedParseTexts() {
		for _, depth := range []int{0, 1, 4, MaxDepth, MaxDepth + 1, MaxDepth + 2, 64} {
			for _, maxValues := range []int{0, 1, 2, 3, 5, 8, 1 << 16} {
				countedParseCheck(t, []byte(text), depth, maxValues)
			}
		}
	}
}

// FuzzCountedParserAgreesWithTheOneBefore is the differential test above
// for any text, depth and value bound.
func FuzzCountedParserAgreesWithTheOneBefore(f *testing.F) {
	for _, text := range countedParseTexts() {
		f.Add([]byte(text), uint8(MaxDepth), uint16(0))
		f.Add([]byte(text), uint8(3), uint16(4))
	}
	f.Fuzz(func(t *testing.T, data []byte, depth uint8, maxValues uint16) {
		if len(data) > 1<<14 {
			return
		}
		countedParseCheck(t, data, int(depth%40), int(maxValues%64))
	})
}

// prevParseLimited is ParseLimited as it was before e1b7597 (git show
// e1b7597^:internal/jcs/parse.go): shared stacks, copied at close. Only
// names changed; hasDuplicate and unescape are unchanged and shared.
func prevParseLimited(data []byte, maxDepth, maxValues int) (any, error) {
	if !utf8.Valid(data) {
		return nil, ErrMalformed
	}
	p := &prevParser{s: string(data), maxDepth: maxDepth, left: maxValues}
	if maxValues <= 0 {
		p.left = -1
	}
	p.prevSpace()
	v, err := p.prevValue(0)
	if err != nil {
		return nil, err
	}
	if p.prevSpace(); p.i != len(p.s) {
		return nil, ErrMalformed
	}
	return v, nil
}

type prevParser struct {
	s        string
	i        int
	maxDepth int
	left     int // values still allowed; -1: unbounded
	elems    []any
	members  []Member
}

func (p *prevParser) prevSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *prevParser) prevValue(depth int) (any, error) {
	if depth > p.maxDepth {
		return nil, ErrTooDeep
	}
	if p.left == 0 {
		return nil, ErrTooMany
	}
	if p.left > 0 {
		p.left--
	}
	if p.i >= len(p.s) {
		return nil, ErrMalformed
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		return p.prevObject(depth)
	case c == '[':
		p.i++
		return p.prevArray(depth)
	case c == '"':
		s, err := p.prevStr()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.prevNumber()
	}
	for _, lit := range [...]struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(p.s)-p.i >= len(lit.text) && p.s[p.i:p.i+len(lit.text)] == lit.text {
			p.i += len(lit.text)
			return lit.v, nil
		}
	}
	return nil, ErrMalformed
}

// next skips whitespace and reports whether the container goes on (a
// comma, or the first element) or ends with close.
func (p *prevParser) prevNext(first bool, close byte) (bool, error) {
	p.prevSpace()
	if p.i >= len(p.s) {
		return false, ErrMalformed
	}
	if p.s[p.i] == close && first {
		p.i++
		return false, nil
	}
	if first {
		return true, nil
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		p.prevSpace()
		return true, nil
	case close:
		p.i++
		return false, nil
	}
	return false, ErrMalformed
}

func (p *prevParser) prevArray(depth int) (any, error) {
	mark := len(p.elems)
	var own []any
	for first := true; ; first = false {
		more, err := p.prevNext(first, ']')
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		v, err := p.prevValue(depth + 1)
		if err != nil {
			return nil, err
		}
		prevPush(&p.elems, &own, mark, v)
	}
	return prevTake(&p.elems, own, mark), nil
}

func (p *prevParser) prevObject(depth int) (any, error) {
	mark := len(p.members)
	var own []Member
	for first := true; ; first = false {
		more, err := p.prevNext(first, '}')
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, ErrMalformed
		}
		name, err := p.prevStr()
		if err != nil {
			return nil, err
		}
		if p.prevSpace(); p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, ErrMalformed
		}
		p.i++
		p.prevSpace()
		v, err := p.prevValue(depth + 1)
		if err != nil {
			return nil, err
		}
		prevPush(&p.members, &own, mark, Member{name, v})
	}
	o := Object(prevTake(&p.members, own, mark))
	if hasDuplicate(o) {
		return nil, ErrDuplicateMember
	}
	return o, nil
}

// spill is the length at which a container's elements leave the shared
// stack for a slice of their own: a long one is then not copied again
// when it closes.
const prevSpill = 1024

// push appends v to the container whose elements start at mark of the
// shared stack, or, past spill elements, are in own. Both grow by
// doubling (append alone grows large slices by 1.25×, allocating about
// five times the final length on the way).
func prevPush[T any](stack, own *[]T, mark int, v T) {
	if *own == nil && len(*stack)-mark < prevSpill {
		if len(*stack) == cap(*stack) {
			*stack = prevDouble(*stack)
		}
		*stack = append(*stack, v)
		return
	}
	if *own == nil {
		n := len(*stack) - mark
		*own = make([]T, n, 2*n)
		copy(*own, (*stack)[mark:])
		clear((*stack)[mark:])
		*stack = (*stack)[:mark]
	}
	if len(*own) == cap(*own) {
		*own = prevDouble(*own)
	}
	*own = append(*own, v)
}

// double returns s in a slice of twice its capacity, exactly: append and
// slices.Grow round a large slice's growth up to about 2.4 times.
func prevDouble[T any](s []T) []T {
	out := make([]T, len(s), max(2*cap(s), 16))
	copy(out, s)
	return out
}

// take returns the elements of a closed container: own, or a copy of
// exactly its elements from the shared stack, which it leaves at mark.
func prevTake[T any](stack *[]T, own []T, mark int) []T {
	if own != nil {
		return own
	}
	out := make([]T, len(*stack)-mark)
	copy(out, (*stack)[mark:])
	clear((*stack)[mark:])
	*stack = (*stack)[:mark]
	return out
}

// str reads a string at p.i (its opening quote): a slice of the text when
// it holds no escape.
func (p *prevParser) prevStr() (string, error) {
	start := p.i + 1
	for j := start; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '"':
			p.i = j + 1
			return p.s[start:j], nil
		case c == '\\':
			return p.prevEscaped(start, j)
		case c < 0x20:
			return "", ErrMalformed
		}
	}
	return "", ErrMalformed
}

// escaped reads the rest of a string whose first escape is at j.
func (p *prevParser) prevEscaped(start, j int) (string, error) {
	buf := make([]byte, 0, j-start+16)
	buf = append(buf, p.s[start:j]...)
	for j < len(p.s) {
		c := p.s[j]
		switch {
		case c == '"':
			p.i = j + 1
			return string(buf), nil
		case c < 0x20:
			return "", ErrMalformed
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= len(p.s) {
			return "", ErrMalformed
		}
		if e := unescape(p.s[j+1]); e != 0 {
			buf = append(buf, e)
			j += 2
			continue
		}
		if p.s[j+1] != 'u' {
			return "", ErrMalformed
		}
		r, n, ok := p.prevHexRune(j)
		if !ok {
			return "", ErrMalformed
		}
		buf = utf8.AppendRune(buf, r)
		j += n
	}
	return "", ErrMalformed
}

// hexRune reads a \u escape at j, joined with the low surrogate escape
// that must follow a high one, and the bytes it took.
func (p *prevParser) prevHexRune(j int) (rune, int, bool) {
	hex := func(k int) (rune, bool) {
		if k+6 > len(p.s) || p.s[k] != '\\' || p.s[k+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(p.s[k+2:k+6], 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex(j)
	switch {
	case !ok:
		return 0, 0, false
	case r >= 0xD800 && r < 0xDC00:
		lo, ok := hex(j + 6)
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return 0, 0, false
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, true
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0, false
	}
	return r, 6, true
}

// number reads a number at p.i (RFC 8259 §6 grammar) as its text, checked
// to have a double value.
func (p *prevParser) prevNumber() (any, error) {
	s, i := p.s, p.i
	digits := func() bool {
		n := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > n
	}
	if s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if !digits() {
		return nil, ErrMalformed
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return nil, ErrMalformed
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return nil, ErrMalformed
		}
	}
	text := s[p.i:i]
	p.i = i
	if !smallInteger(text) {
		if _, err := parseDouble(text); err != nil {
			return nil, err
		}
	}
	return json.Number(text), nil
}
