package jcs

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"unicode/utf8"
)

// ErrTooMany: the text holds more values (scalars, arrays and objects)
// than the bound ParseLimited was given.
const ErrTooMany Error = "jcs: too many JSON values"

// ParseLimited is Parse with a bound on the number of values the text
// holds (every scalar, array and object counts one; member names do not):
// more is ErrTooMany, found before the tree grows past the bound. The tree
// costs a few tens of bytes per value, so a caller bounding the bytes of
// its input and the values bounds the memory of the parse. maxValues <= 0
// bounds nothing.
func ParseLimited(data []byte, maxDepth, maxValues int) (any, error) {
	// Invalid UTF-8 and lone surrogate escapes are refused (hexRune), never
	// replaced with U+FFFD as encoding/json does: two different documents
	// would share one canonical form (and one digest). RFC 8785 §3.2.2.2
	// needs I-JSON strings.
	if !utf8.Valid(data) {
		return nil, ErrMalformed
	}
	// One copy of the text; strings without escapes and numbers are
	// slices of it, not copies.
	p := &parser{s: string(data), maxDepth: maxDepth, left: maxValues}
	if maxValues <= 0 {
		p.left = -1
	}
	p.sizes = containerSizes(p.s, data, maxValues)
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	// Only whitespace may follow the value.
	if p.space(); p.i != len(p.s) {
		return nil, ErrMalformed
	}
	return v, nil
}

// parser reads one JSON text (RFC 8259 grammar) into a tree. Each array
// and object is allocated once, at the length a scan of the text found
// for it (sizes): no slice grows, and none is copied when it closes.
type parser struct {
	s        string
	i        int
	maxDepth int
	left     int     // values still allowed; -1: unbounded
	sizes    []int32 // elements of each container, in the order they open
	opened   int     // containers opened so far
}

// containerSizes returns the number of elements (or members) of each array
// and object of s (data, as bytes), in the order they open: a scan that
// skips strings and counts commas, allocating nothing but the result,
// which a first scan sizes exactly. The counts are only trusted for a
// text that is valid JSON nested no deeper than MaxDepth (json.Valid, which
// allocates nothing per value): in a text the parse refuses, commas it
// never reaches would reserve room (16 objects opened, then 65,535 commas
// each, reserved 33 times the text). They are nil otherwise, and when s
// opens more containers than maxValues (> 0) allows or more than 2^31
// values: the parse then grows each container as it reads it.
func containerSizes(s string, data []byte, maxValues int) []int32 {
	n, depth, deepest := 0, 0, 0
	opened := func() {
		n++
		depth++
		deepest = max(deepest, depth)
	}
	closed := func(c byte) {
		if c == ']' || c == '}' {
			depth--
		}
	}
	if len(s) >= math.MaxInt32 || !scanContainers(s, closed, opened) || n == 0 || (maxValues > 0 && n > maxValues) ||
		deepest > MaxDepth || !json.Valid(data) {
		return nil
	}
	sizes := make([]int32, n)
	// The containers open at this point; those nested deeper than the
	// stack (which the parse refuses at MaxDepth) keep a size of 0.
	var stack [MaxDepth + 2]int32
	depth, next := 0, int32(0)
	scanContainers(s, func(c byte) {
		if c == ']' || c == '}' {
			depth = max(depth-1, 0)
			return
		}
		if depth == 0 || depth > len(stack) {
			return
		}
		if top := stack[depth-1]; c == ',' {
			sizes[top]++
		} else if sizes[top] == 0 { // the first element
			sizes[top] = 1
		}
	}, func() {
		if depth > 0 && depth <= len(stack) && sizes[stack[depth-1]] == 0 {
			sizes[stack[depth-1]] = 1
		}
		if depth < len(stack) {
			stack[depth] = next
		}
		depth++
		next++
	})
	return sizes
}

// scanContainers walks s outside its strings, calling open at each '['
// or '{', and token at each other byte that is not whitespace or ':' (a
// string's opening quote stands for the string); false for an
// unterminated string.
func scanContainers(s string, token func(byte), open func()) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '[', '{':
			open()
		case ' ', '\t', '\n', '\r', ':':
		case '"':
			token(c)
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i >= len(s) {
				return false
			}
		default:
			token(c)
		}
	}
	return true
}

// size returns the capacity for the container being opened: what
// containerSizes found, at most the values still allowed.
func (p *parser) size() int {
	k := p.opened
	p.opened++
	if k >= len(p.sizes) {
		return 0
	}
	n := int(p.sizes[k])
	if p.left >= 0 {
		n = min(n, p.left)
	}
	return n
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
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
		return p.object(depth)
	case c == '[':
		p.i++
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
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
func (p *parser) next(first bool, close byte) (bool, error) {
	p.space()
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
		p.space()
		return true, nil
	case close:
		p.i++
		return false, nil
	}
	return false, ErrMalformed
}

func (p *parser) array(depth int) (any, error) {
	elems := make([]any, 0, p.size())
	for first := true; ; first = false {
		more, err := p.next(first, ']')
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		elems = append(elems, v)
	}
	return elems, nil
}

func (p *parser) object(depth int) (any, error) {
	o := make(Object, 0, p.size())
	for first := true; ; first = false {
		more, err := p.next(first, '}')
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, ErrMalformed
		}
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		if p.space(); p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, ErrMalformed
		}
		p.i++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		o = append(o, Member{name, v})
	}
	if hasDuplicate(o) {
		return nil, ErrDuplicateMember
	}
	return o, nil
}

// hasDuplicate reports whether two members of o share a name: pairwise
// for a few members, else through an open-addressing table of member
// indexes under a hash seeded per call (four bytes a slot, no copy of the
// names, and no order an input can make collide).
func hasDuplicate(o Object) bool {
	if len(o) <= 8 {
		for i := range o {
			for j := i + 1; j < len(o); j++ {
				if o[i].Name == o[j].Name {
					return true
				}
			}
		}
		return false
	}
	size := 16
	for size < 2*len(o) {
		size *= 2
	}
	table := make([]int32, size)
	seed := maphash.MakeSeed()
	for i, m := range o {
		for h := maphash.String(seed, m.Name) & uint64(size-1); ; h = (h + 1) & uint64(size-1) {
			if table[h] == 0 {
				table[h] = int32(i + 1)
				break
			}
			if o[table[h]-1].Name == m.Name {
				return true
			}
		}
	}
	return false
}

// str reads a string at p.i (its opening quote): a slice of the text when
// it holds no escape.
func (p *parser) str() (string, error) {
	start := p.i + 1
	for j := start; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '"':
			p.i = j + 1
			return p.s[start:j], nil
		case c == '\\':
			return p.escaped(start, j)
		case c < 0x20:
			return "", ErrMalformed
		}
	}
	return "", ErrMalformed
}

// escaped reads the rest of a string whose first escape is at j.
func (p *parser) escaped(start, j int) (string, error) {
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
		r, n, ok := p.hexRune(j)
		if !ok {
			return "", ErrMalformed
		}
		buf = utf8.AppendRune(buf, r)
		j += n
	}
	return "", ErrMalformed
}

// unescape is the byte a two-character escape stands for, 0 if none.
func unescape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

// hexRune reads a \u escape at j, joined with the low surrogate escape
// that must follow a high one, and the bytes it took.
func (p *parser) hexRune(j int) (rune, int, bool) {
	return escapedRune(p.s, j)
}

// escapedRune reads the \u escape at s[j:], joined with the low surrogate
// escape that must follow a high one, and the bytes it took: false for a
// lone surrogate (a low one, or a high one not followed by a low one) and
// for an escape that is not \u and four hexadecimal digits.
func escapedRune[T string | []byte](s T, j int) (rune, int, bool) {
	r, ok := hex4(s, j)
	switch {
	case !ok:
		return 0, 0, false
	case r >= 0xD800 && r < 0xDC00:
		lo, ok := hex4(s, j+6)
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return 0, 0, false
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, true
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0, false
	}
	return r, 6, true
}

// hex4 reads the escape \uXXXX at s[k:] as the code unit it writes.
func hex4[T string | []byte](s T, k int) (rune, bool) {
	if k < 0 || k+6 > len(s) || s[k] != '\\' || s[k+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range [4]byte{s[k+2], s[k+3], s[k+4], s[k+5]} {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// ExactStrings reports whether every string of the JSON text data reads
// as written: data is UTF-8, and every \u escape of a UTF-16 surrogate is
// half of a high-low pair (RFC 7493 §2.1, as Parse requires).
// encoding/json, and every reader built on it, decodes a byte that is not
// UTF-8 and a lone surrogate escape as U+FFFD, so that different texts
// ("\ud800", "\udbff", "\ufffd") read as one value, and two different
// member names as a duplicate: a reader built on it that must read a text
// one way refuses it unless ExactStrings holds (docs/SPEC-DECISIONS.md
// JSON-1). Only those are looked at: the rest of the text, other escapes
// included, is its parser's to judge. It allocates nothing.
func ExactStrings(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	in := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			in = !in
		case c == '\\' && in:
			r, ok := hex4(data, i)
			if !ok || r < 0xD800 || r > 0xDFFF {
				i++ // a two-character escape, or the parser's to refuse
				continue
			}
			_, n, ok := escapedRune(data, i)
			if !ok {
				return false
			}
			i += n - 1
		}
	}
	return true
}

// digitNumbers are the numbers of one digit, boxed once: a wide object
// of "a":0 members costs no allocation per value.
var digitNumbers = func() (out [10]any) {
	for i := range out {
		out[i] = json.Number(rune('0' + i))
	}
	return out
}()

// number reads a number at p.i (RFC 8259 §6 grammar) as its text, checked
// to have a double value.
func (p *parser) number() (any, error) {
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
	if len(text) == 1 { // a digit: one boxed value for all of them
		return digitNumbers[text[0]-'0'], nil
	}
	if !smallInteger(text) {
		if _, err := parseDouble(text); err != nil {
			return nil, err
		}
	}
	return json.Number(text), nil
}
