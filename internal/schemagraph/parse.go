package schemagraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/internal/jsonnum"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// Default bounds of Parse (zero Options fields).
const (
	// DefaultMaxBytes bounds one document.
	DefaultMaxBytes = 4 << 20
	// DefaultMaxDepth bounds the nesting of arrays and objects.
	DefaultMaxDepth = 128
	// DefaultMaxNodes bounds the values (scalars, arrays, objects) of one
	// document.
	DefaultMaxNodes = 1 << 21
)

// Options bounds and shapes one Parse. The zero value refuses duplicate
// members, keeps numbers as json.Number and applies the default bounds.
type Options struct {
	MaxBytes int // 0: DefaultMaxBytes
	MaxDepth int // 0: DefaultMaxDepth; containers nested deeper are refused
	MaxNodes int // 0: DefaultMaxNodes
	// Duplicate, if set, is called with the JSON pointer of a member whose
	// name its object already holds, and the later value replaces the
	// earlier one (as encoding/json does); nil refuses it (KindDuplicate).
	Duplicate func(pointer string)
	// Float64 turns numbers into float64, the double nearest each
	// (internal/jsonnum: what encoding/json gives, but exact for a number
	// of more than 800 digits before its point, and in time linear in its
	// text), refusing one out of range (KindNumber); otherwise they stay
	// json.Number.
	Float64 bool
	// Number, if set, vets each number literal (json.Number form only);
	// false refuses it (KindNumber).
	Number func(literal string) bool
	// EncodingJSON reads the document as encoding/json does, in one
	// decode (the fast path, docs/SPEC-DECISIONS.md BUILD-3): a member
	// named twice keeps its last value unreported, Number and MaxNodes
	// are not applied, and MaxDepth is checked by a scan of the bytes
	// before the decode (encoding/json bounds nesting at 10,000 itself).
	// It accepts and returns what the token path with Duplicate set does.
	EncodingJSON bool
}

// Kind classifies a parse failure.
type Kind int

// The kinds of Error.
const (
	KindSyntax       Kind = iota + 1 // not JSON, or truncated
	KindEmpty                        // no value at all
	KindTrailing                     // data after the value
	KindTooLarge                     // over MaxBytes
	KindTooDeep                      // nested deeper than MaxDepth
	KindTooManyNodes                 // over MaxNodes
	KindDuplicate                    // a member name twice in one object
	KindNumber                       // a number refused by Float64 or Number
)

// Error is a parse failure. Pointer locates it (RFC 6901) where it has a
// place: KindTooDeep (the container), KindDuplicate (the member),
// KindNumber (the number). Its text never repeats document content.
type Error struct {
	Kind    Kind
	Pointer string
	Cause   error // the decoder's error, for KindSyntax and KindTrailing
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindEmpty:
		return "schemagraph: no json value"
	case KindTrailing:
		return "schemagraph: trailing data after the json value"
	case KindTooLarge:
		return "schemagraph: document too large"
	case KindTooDeep:
		return "schemagraph: nested too deep"
	case KindTooManyNodes:
		return "schemagraph: too many values"
	case KindDuplicate:
		return "schemagraph: duplicate member"
	case KindNumber:
		return "schemagraph: number refused"
	}
	return "schemagraph: not valid json"
}

func (e *Error) Unwrap() error { return e.Cause }

// Parse decodes exactly one JSON value into map[string]any, []any, string,
// bool, nil and json.Number (or float64, Options.Float64), within the
// bounds of o. It accepts exactly the syntax encoding/json accepts.
func Parse(data []byte, o Options) (any, error) {
	limit.Default(&o.MaxBytes, DefaultMaxBytes)
	limit.Default(&o.MaxDepth, DefaultMaxDepth)
	limit.Default(&o.MaxNodes, DefaultMaxNodes)
	if len(data) > o.MaxBytes {
		return nil, &Error{Kind: KindTooLarge}
	}
	if o.EncodingJSON {
		return decode(data, o)
	}
	p := &parser{dec: json.NewDecoder(bytes.NewReader(data)), o: o}
	p.dec.UseNumber()
	tok, err := p.dec.Token()
	if err == io.EOF {
		return nil, &Error{Kind: KindEmpty}
	}
	if err != nil {
		return nil, &Error{Kind: KindSyntax, Cause: err}
	}
	v, err := p.value(tok, 0)
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, &Error{Kind: KindTrailing, Cause: err}
	}
	return v, nil
}

// decode is Parse with Options.EncodingJSON. With Float64 it decodes
// numbers as encoding/json does (strconv.ParseFloat) only when scan found
// every one a number strconv rounds fast (jsonnum.StrconvFast); a valid
// document holding another is decoded with its numbers kept as text and
// then rounded by jsonnum (floats): the same doubles, in time linear in
// the text, and the right one for a number of more than 800 digits before
// its point (docs/SPEC-DECISIONS.md JSON-3). An invalid one gets
// json.Unmarshal's own error, as a document of fast numbers does
// (Unmarshal checks the whole text before it decodes any of it): data
// after the value is KindSyntax with Float64 whatever the numbers cost.
func decode(data []byte, o Options) (any, error) {
	deepest, slow := scan(data, o.Float64)
	if o.MaxDepth < 10000 && deepest > o.MaxDepth {
		return nil, &Error{Kind: KindTooDeep}
	}
	var v any
	var err error
	if o.Float64 && (!slow || !json.Valid(data)) {
		err = json.Unmarshal(data, &v)
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err = dec.Decode(&v); err == nil {
			if _, terr := dec.Token(); terr != io.EOF {
				return nil, &Error{Kind: KindTrailing, Cause: terr}
			}
			if o.Float64 {
				return floats(v)
			}
		}
	}
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return v, nil
	case errors.As(err, &te):
		return nil, &Error{Kind: KindNumber, Cause: err}
	case len(bytes.TrimLeft(data, " \t\r\n")) == 0:
		return nil, &Error{Kind: KindEmpty}
	}
	return nil, &Error{Kind: KindSyntax, Cause: err}
}

// floats replaces, in place, every json.Number of v (as decoded with
// UseNumber) by its double (jsonnum.ParseFloat), refusing one beyond the
// doubles (KindNumber). The recursion is as deep as the document, at
// most 10,000 (encoding/json's nesting bound).
func floats(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		f, err := jsonnum.ParseFloat(string(t))
		if err != nil {
			return nil, &Error{Kind: KindNumber, Cause: err}
		}
		return f, nil
	case []any:
		for i, x := range t {
			y, err := floats(x)
			if err != nil {
				return nil, err
			}
			t[i] = y
		}
	case map[string]any:
		for k, x := range t {
			y, err := floats(x)
			if err != nil {
				return nil, err
			}
			if _, isNum := x.(json.Number); isNum {
				t[k] = y // containers are changed in place
			}
		}
	}
	return v, nil
}

// scan returns how deep arrays and objects nest in data, counting
// brackets outside strings (data not yet known to be JSON), and, when
// numbers is set, whether a number outside strings is one strconv does
// not round fast (jsonnum.StrconvFast). It reads data with jsonnum's
// Scanner, as bundlebuild reads a schema to charge it
// (docs/SPEC-DECISIONS.md JSON-13).
func scan(data []byte, numbers bool) (deepest int, slow bool) {
	depth := 0
	sc := jsonnum.NewScanner(data)
	for {
		switch kind, i, j := sc.Next(); kind {
		case 0:
			return deepest, slow
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		case jsonnum.TokenNumber:
			if numbers && !slow {
				slow = !jsonnum.StrconvFast(string(data[i:j]))
			}
		}
	}
}

type parser struct {
	dec   *json.Decoder
	o     Options
	nodes int
	path  []string
}

func (p *parser) fail(k Kind) *Error {
	return &Error{Kind: k, Pointer: joinPointer(p.path)}
}

func (p *parser) next() (json.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, &Error{Kind: KindSyntax, Cause: err}
	}
	return tok, nil
}

func (p *parser) value(tok json.Token, depth int) (any, error) {
	if p.nodes++; p.nodes > p.o.MaxNodes {
		return nil, p.fail(KindTooManyNodes)
	}
	switch t := tok.(type) {
	case json.Number:
		return p.number(t)
	case json.Delim:
		if depth >= p.o.MaxDepth {
			return nil, p.fail(KindTooDeep)
		}
		if t == '[' {
			return p.array(depth)
		}
		return p.object(depth)
	}
	return tok, nil // string, bool, nil
}

func (p *parser) number(n json.Number) (any, error) {
	if p.o.Float64 {
		f, err := jsonnum.ParseFloat(string(n))
		if err != nil {
			return nil, p.fail(KindNumber)
		}
		return f, nil
	}
	if p.o.Number != nil && !p.o.Number(string(n)) {
		return nil, p.fail(KindNumber)
	}
	return n, nil
}

// member parses the value of the element or member p.path ends with, one
// level below depth, then takes its name off p.path.
func (p *parser) member(depth int) (any, error) {
	tok, err := p.next()
	if err != nil {
		return nil, err
	}
	v, err := p.value(tok, depth+1)
	if err != nil {
		return nil, err
	}
	p.path = p.path[:len(p.path)-1]
	return v, nil
}

func (p *parser) array(depth int) (any, error) {
	arr := []any{}
	for p.dec.More() {
		p.path = append(p.path, strconv.Itoa(len(arr)))
		v, err := p.member(depth)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	if _, err := p.next(); err != nil { // ']'
		return nil, err
	}
	return arr, nil
}

func (p *parser) object(depth int) (any, error) {
	m := map[string]any{}
	for p.dec.More() {
		ktok, err := p.next()
		if err != nil {
			return nil, err
		}
		key, _ := ktok.(string) // the decoder only yields strings here
		p.path = append(p.path, key)
		if _, dup := m[key]; dup {
			if p.o.Duplicate == nil {
				return nil, p.fail(KindDuplicate)
			}
			p.o.Duplicate(joinPointer(p.path))
		}
		v, err := p.member(depth)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	if _, err := p.next(); err != nil { // '}'
		return nil, err
	}
	return m, nil
}

// MaxPointer bounds a pointer an Error carries: a longer one is cut after
// its last whole token that fits, so it still names an enclosing value.
const MaxPointer = 512

// joinPointer renders path tokens as a JSON pointer, at most MaxPointer
// bytes (plus the token that crosses the bound, as callers clip).
func joinPointer(path []string) string {
	var b strings.Builder
	for _, t := range path {
		b.WriteByte('/')
		b.WriteString(EscapeToken(t))
		if b.Len() > MaxPointer {
			break
		}
	}
	return b.String()
}

// EscapeToken escapes one reference token of a JSON pointer (RFC 6901).
func EscapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// UnescapeToken undoes EscapeToken.
func UnescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
