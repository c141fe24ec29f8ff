package compat

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"sync"
)

// A schema may list many values (enum, const), and a check compares
// what the producer lists with what the consumer lists at every step that
// meets them. The checker therefore reads each list of a document once
// (listedOf): the canonical form of each value (canonKey: equal values
// have the same form, and only they), its type, and a set of the forms,
// so that comparing two lists costs one lookup a value, never a number
// expanded from its exponent. What is left of that work, a pass over a
// list, is charged to the check's value work (chargeValues), bounded by
// MaxValueWork apart from MaxSteps.

// valuesPerStep is how many listed values one step of a check may pass
// over for free: a pass over n values costs n/valuesPerStep steps more
// (so lists of fewer values cost nothing more).
const valuesPerStep = 64

// ratBytesPerStep is how many bytes of a number (its text and its
// exponent's value) one step may read exactly (ratOf): a listed number
// costs its size/ratBytesPerStep steps each time it is.
const ratBytesPerStep = 128

// listedValue is what the checker keeps of one listed value (24 bytes:
// a list is kept for its document's life).
type listedValue struct {
	key string // canonKey, a slice of one string holding the list's forms
	// ratCost is the steps a reading of it by ratOf costs.
	ratCost int32
	t       typeSet // typeOfValue
}

// listed is one list of values of a document (an enum, or a const as a
// list of one), read once.
type listed struct {
	vals  []any
	info  []listedValue
	set   map[string]struct{}
	types typeSet // of all its values
}

// valueReads counts what a check read of listed values: the tests read
// and bound it (checker.reads; matrixOf sums its checks'). listed is the
// values read into lists (newListed: their canonical forms written, each
// list once per document when cached); rats is the producer's listed
// numbers read exactly (listedRat: a big.Rat each).
type valueReads struct{ listed, rats int64 }

// add adds the counts of o to r.
func (r *valueReads) add(o valueReads) { r.listed += o.listed; r.rats += o.rats }

// newListed reads the list vals, counted in reads. The canonical forms
// are written into one buffer and kept as slices of one string, not a
// string each.
func newListed(vals []any, reads *valueReads) *listed {
	reads.listed += int64(len(vals))
	l := &listed{vals: vals, info: make([]listedValue, len(vals)), set: map[string]struct{}{}}
	var buf []byte
	ends := make([]int, len(vals))
	for i, v := range vals {
		buf = appendCanon(buf, v)
		ends[i] = len(buf)
	}
	forms := string(buf)
	start := 0
	for i, v := range vals {
		k := forms[start:ends[i]]
		start = ends[i]
		l.info[i] = listedValue{key: k, t: typeOfValue(v), ratCost: int32(min(ratCostOf(v), math.MaxInt32))}
		l.set[k] = struct{}{}
		l.types |= l.info[i].t
	}
	return l
}

// has reports whether the list holds a value equal to the one of key k.
func (l *listed) has(k string) bool {
	_, ok := l.set[k]
	return ok
}

// ratCostOf is the steps one ratOf reading of v costs: a number's text
// and the digits its exponent adds, by ratBytesPerStep.
func ratCostOf(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	d, ok := decimalOf(n)
	if !ok || d.raw {
		return 0 // not read
	}
	e := d.exp
	if e < 0 {
		e = -e
	}
	return (len(n) + e) / ratBytesPerStep
}

// listedOf is the list of the keyword kw of the part p: its enum (an
// array; ok is false when it is not one) or its const (a list of one),
// read once per document (a read counted in reads).
func listedOf(p part, kw string, reads *valueReads) (*listed, bool) {
	m, _ := p.n.v.(map[string]any)
	val, ok := m[kw]
	if !ok {
		return nil, false
	}
	vals := []any{val}
	if kw == "enum" {
		if vals, ok = val.([]any); !ok {
			return nil, false
		}
	}
	d := p.n.doc
	if d == nil {
		return newListed(vals, reads), true
	}
	k := p.n.ptr + "\x00" + kw
	d.listMu.Lock()
	defer d.listMu.Unlock()
	if l, ok := d.lists[k]; ok {
		return l, true
	}
	l := newListed(vals, reads)
	if d.lists == nil {
		d.lists = map[string]*listed{}
	}
	d.lists[k] = l
	return l, true
}

// partListed is the values the part p lists: its const, else its enum
// (addListed); nil when it lists none. A list read is counted in reads.
func partListed(p part, reads *valueReads) *listed {
	if l, ok := listedOf(p, "const", reads); ok {
		return l
	}
	if l, ok := listedOf(p, "enum", reads); ok {
		return l
	}
	return nil
}

// canonKey is the canonical form of the JSON value v: two values have the
// same form exactly when equal holds between them. Its cost is the length
// of v's text, whatever its numbers' exponents.
func canonKey(v any) string { return string(appendCanon(nil, v)) }

// appendCanon appends the canonical form of v to b. Each form is
// self-delimiting: a type letter, then a length or count where the rest
// is not of fixed shape.
func appendCanon(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if x {
			return append(b, 't')
		}
		return append(b, 'f')
	case string:
		return appendSized(append(b, 's'), x)
	case json.Number:
		d, ok := decimalOf(x)
		if !ok || d.raw {
			return appendSized(append(b, 'x'), string(x))
		}
		b = append(b, 'd')
		if d.neg {
			b = append(b, '-')
		}
		b = append(b, d.digits...)
		b = append(b, 'e')
		b = strconv.AppendInt(b, int64(d.exp), 10)
		return append(b, ';')
	case []any:
		b = strconv.AppendInt(append(b, 'a'), int64(len(x)), 10)
		b = append(b, ':')
		for _, e := range x {
			b = appendCanon(b, e)
		}
		return b
	case map[string]any:
		b = strconv.AppendInt(append(b, 'o'), int64(len(x)), 10)
		b = append(b, ':')
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendCanon(appendSized(b, k), x[k])
		}
		return b
	}
	// Not a JSON value: the parser makes none.
	return append(b, '?')
}

// appendSized appends s with its length before it.
func appendSized(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// chargeValues charges a pass over n listed values to the check's value
// work (MaxValueWork) and the matrix's budget: n/valuesPerStep, plus cost.
func (c *checker) chargeValues(n, cost int) {
	s := n/valuesPerStep + cost
	if s == 0 {
		return
	}
	c.work += s
	if c.budget != nil {
		*c.budget -= s
	}
}

// chargeLookups charges n lookups (parts of a conjunction looked up for
// a property name or an item index, patterns matched against a name, an
// own schema's parts passed over) to the check's value work and the
// matrix's budget, valuesPerStep a unit as listed values are, counted
// over the whole check (c.lookups): a call of fewer than valuesPerStep is
// charged with the next ones, not rounded away, so many short walks cost
// what one long one does (COMPAT-16).
func (c *checker) chargeLookups(n int) {
	before := c.lookups / valuesPerStep
	c.lookups += n
	c.chargeValues(0, c.lookups/valuesPerStep-before)
}

// overWork reports whether the check is past its value work
// (MaxValueWork) or the matrix past its budget: what follows is
// too_complex.
func (c *checker) overWork() bool { return c.work > MaxValueWork || c.spent() }

// listedRat is ratOf of x, a listed value of the producer, counted in
// c.reads.rats when it is a number (the tests bound those reads).
func (c *checker) listedRat(x any) (*big.Rat, bool) {
	if _, ok := x.(json.Number); ok {
		c.reads.rats++
	}
	return ratOf(x)
}

// chargeRats charges a pass over the producer's listed values that reads
// each number exactly (ratOf).
func (c *checker) chargeRats(f facts) {
	if !f.hasEnum {
		return
	}
	cost := 0
	for _, i := range f.info {
		cost += int(i.ratCost)
	}
	c.chargeValues(len(f.enum), cost)
}

// listedCache is a document's lists, read when first compared
// (listedOf); listMu guards them, a document being shared by the checks
// of its Source.
type listedCache struct {
	listMu sync.Mutex
	lists  map[string]*listed
}
