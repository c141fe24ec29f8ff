package compat

import (
	"encoding/json"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"
)

// This file holds the rules that decide keywords the structural
// comparison alone leaves open: an accepting oneOf whose branches overlap,
// dependentRequired, not, if/then/else and dependentSchemas. Each decides
// only where JSON Schema 2020-12 semantics settle the question from what
// the checker proves; everything else stays Unknown.

// inhabited reports whether the conjunction ps (of side s) is proven to
// admit at least one instance: a null, a boolean, a string, a number, the
// empty object or the empty array that its facts allow, or one of its
// listed scalar values. false means "not proven", never "empty". A
// conjunction with assertions the facts leave out (not, if, patterns on
// names, an unsplit anyOf, any oneOf) is never proven inhabited.
func (c *checker) inhabited(s *side, ps []part) bool {
	if len(ps) == 0 {
		return true
	}
	v := c.flatten(s, ps)
	if v.never || len(v.bad) > 0 || !factsCover(v) {
		return false
	}
	f := c.factsOf(v)
	if f.opaque || f.types == 0 {
		return false
	}
	if f.hasEnum {
		c.chargeRats(f)
		for _, x := range f.enum {
			if c.scalarWitness(f, x) {
				return true
			}
		}
		return false
	}
	return plainWitness(f)
}

// factsCover reports whether the facts of the flattened view v say all
// that its parts assert, as far as a witness goes: no oneOf (a witness of
// one branch may match another), every anyOf expanded into the view, and
// a "type" and an "enum" of the shapes factsOf reads.
func factsCover(v view) bool {
	have := unionBranches(v.parts)
	for _, p := range v.parts {
		m := p.n.v.(map[string]any)
		if _, ok := m["oneOf"]; ok {
			// A witness of one branch may match another.
			return false
		}
		if br, ok := m["anyOf"]; ok {
			list, _ := br.([]any)
			if !expanded(have, p, "anyOf", len(list)) {
				return false
			}
		}
		if t, ok := m["type"]; ok {
			if _, ok := typeOfKeyword(t); !ok {
				return false
			}
		}
		if e, ok := m["enum"]; ok {
			if _, ok := e.([]any); !ok {
				return false
			}
		}
	}
	return true
}

// plainWitness reports whether the facts f, listing no values, admit a
// null, a boolean, a string, a number, the empty object or the empty
// array.
func plainWitness(f facts) bool {
	if f.types&(tNull|tBool) != 0 {
		return true // null and booleans meet every other keyword
	}
	if f.types&tString != 0 && len(f.patterns) == 0 && len(f.formats) == 0 &&
		(f.maxLen == nil || f.minLen == nil || f.minLen.Cmp(f.maxLen) <= 0) {
		return true
	}
	if f.types&tNum != 0 && numberWitness(f) {
		return true
	}
	if f.types&tObject != 0 && len(f.required) == 0 && (f.minProps == nil || f.minProps.Sign() == 0) {
		return true // {}
	}
	if f.types&tArray != 0 && (f.minItems == nil || f.minItems.Sign() == 0) {
		return true // []
	}
	return false
}

// scalarWitness reports whether the listed value x meets the facts (a null,
// boolean, string or number; listed objects and arrays are not checked).
func (c *checker) scalarWitness(f facts, x any) bool {
	switch v := x.(type) {
	case nil, bool:
		return true
	case string:
		n := big.NewRat(int64(utf8.RuneCountInString(v)), 1)
		if (f.minLen != nil && n.Cmp(f.minLen) < 0) || (f.maxLen != nil && n.Cmp(f.maxLen) > 0) || len(f.formats) > 0 {
			return false
		}
		for pat := range f.patterns {
			re := c.compile(pat)
			if re == nil {
				return false
			}
			if matched, decided := c.match(re, v); !matched || !decided {
				return false
			}
		}
		return true
	}
	r, ok := c.listedRat(x)
	if !ok {
		return false
	}
	if f.lower != nil {
		if cmp := r.Cmp(f.lower.r); cmp < 0 || (cmp == 0 && f.lower.excl) {
			return false
		}
	}
	if f.upper != nil {
		if cmp := r.Cmp(f.upper.r); cmp > 0 || (cmp == 0 && f.upper.excl) {
			return false
		}
	}
	for _, m := range f.mults {
		if !new(big.Rat).Quo(r, m).IsInt() {
			return false
		}
	}
	return true
}

// numberWitness reports whether a number (an integer where only integers
// are admitted) meets the bounds and multipleOf of the facts. With a
// multipleOf only 0 is tried (a multiple of everything).
func numberWitness(f facts) bool {
	lo, hi := f.lower, f.upper
	if len(f.mults) > 0 {
		zero := new(big.Rat)
		if lo != nil && (lo.r.Cmp(zero) > 0 || (lo.r.Sign() == 0 && lo.excl)) {
			return false
		}
		if hi != nil && (hi.r.Cmp(zero) < 0 || (hi.r.Sign() == 0 && hi.excl)) {
			return false
		}
		return true
	}
	if lo == nil || hi == nil {
		return true
	}
	if f.types&tFrac != 0 {
		cmp := lo.r.Cmp(hi.r)
		return cmp < 0 || (cmp == 0 && !lo.excl && !hi.excl)
	}
	l := ceilRat(lo.r)
	if lo.excl && lo.r.IsInt() {
		l.Add(l, big.NewInt(1))
	}
	h := floorRat(hi.r)
	if hi.excl && hi.r.IsInt() {
		h.Sub(h, big.NewInt(1))
	}
	return l.Cmp(h) <= 0
}

func floorRat(r *big.Rat) *big.Int {
	// big.Int.Div is Euclidean: with a positive denominator, the floor.
	return new(big.Int).Div(r.Num(), r.Denom())
}

func ceilRat(r *big.Rat) *big.Int {
	return new(big.Int).Neg(floorRat(new(big.Rat).Neg(r)))
}

// reverse reports whether every instance of xs (a conjunction of the
// accepting side) is proven valid under ys (a conjunction of the producing
// side): the subset question with the sides swapped. It shares the
// step budget of c.
func (c *checker) reverse(xs, ys []part) bool {
	sc := &checker{a: c.b, b: c.a, memo: map[string]int{}, assumed: maxInt, regexp: c.regexp,
		steps: c.steps, work: c.work, depth: c.depth, over: c.over, budget: c.budget}
	fs := sc.subset(xs, ys)
	c.steps, c.work, c.regexp = sc.steps, sc.work, sc.regexp
	if sc.over {
		c.over = true
	}
	return len(fs) == 0 && !sc.over
}

// proven reports whether every instance of the producing conjunction a is
// valid under the accepting conjunction b, without reporting why not.
func (c *checker) proven(a, b []part) bool {
	return len(c.subset(a, b)) == 0
}

// oneOf decides an accepting oneOf. An instance is valid when exactly one
// branch accepts it. Compatible: every producer instance (or, per type,
// every producer instance of that type) is covered by one branch and
// proven disjoint from the others. Incompatible (one_of_ambiguous): a
// producer instance is proven to match two branches — the producer (or
// its part of one type) is inside both and inhabited, or it is inside one
// branch and another branch is inside it and inhabited. done is false when
// no branch is proven to cover anything; the caller then looks for a lost
// type.
func (c *checker) oneOf(va view, f facts, p part, branches []part) (fs []Finding, done bool) {
	exclusive := func(ps []part, i int) bool {
		for j, other := range branches {
			if j != i && !c.disjoint(c.a, ps, c.b, []part{other}) {
				return false
			}
		}
		return true
	}
	// overlap looks for a producer instance of ps that branch i (which
	// covers ps) and another branch both accept.
	overlap := func(ps []part, cover []int) (int, int, bool) {
		if len(cover) >= 2 && c.inhabited(c.a, ps) {
			return cover[0], cover[1], true
		}
		i := cover[0]
		for j, other := range branches {
			if j != i && c.reverse([]part{other}, ps) && c.inhabited(c.b, []part{other}) {
				return i, j, true
			}
		}
		return 0, 0, false
	}
	covers := func(ps []part) []int {
		var out []int
		for i, br := range branches {
			if c.proven(ps, []part{br}) {
				out = append(out, i)
			}
		}
		return out
	}
	ambiguous := func(i, j int) []Finding {
		return []Finding{finding(Incompatible, "one_of_ambiguous", p, "oneOf", "an instance valid for the producer matches branches %d and %d", i, j)}
	}
	whole := covers(va.parts)
	if len(whole) > 0 {
		if len(whole) == 1 && exclusive(va.parts, whole[0]) {
			return nil, true
		}
		if i, j, ok := overlap(va.parts, whole); ok {
			return ambiguous(i, j), true
		}
	}
	// Split the producer by listed value or by type (integers apart: they
	// may match an "integer" and a "number" branch).
	allCovered, unsure := true, false
	rs, ok := c.restrictions(va, f)
	if !ok {
		return []Finding{finding(Unknown, "too_complex", p, "oneOf", "more than %d split producers in one check", MaxSplits)}, true
	}
	for _, restricted := range rs {
		cv := covers(restricted)
		if len(cv) == 0 {
			allCovered = false
			continue
		}
		if len(cv) == 1 && exclusive(restricted, cv[0]) {
			continue
		}
		if i, j, ok := overlap(restricted, cv); ok {
			return ambiguous(i, j), true
		}
		unsure = true
	}
	if allCovered && !unsure {
		return nil, true
	}
	if len(whole) > 0 || unsure {
		return []Finding{finding(Unknown, "one_of_ambiguous", p, "oneOf", "a branch covers the producer, exclusivity not proven")}, true
	}
	return nil, false
}

// requiredClosure is what an instance holding the properties start must
// also hold under the producer's required and dependentRequired.
func requiredClosure(va view, f facts, start ...string) map[string]bool {
	have := map[string]bool{}
	for k := range f.required {
		have[k] = true
	}
	for _, s := range start {
		have[s] = true
	}
	for changed := true; changed; {
		changed = false
		for _, p := range va.parts {
			deps, _ := p.n.v.(map[string]any)["dependentRequired"].(map[string]any)
			for k, list := range deps {
				l, _ := list.([]any)
				if !have[k] {
					continue
				}
				for _, d := range l {
					if s, ok := d.(string); ok && !have[s] {
						have[s], changed = true, true
					}
				}
			}
		}
	}
	return have
}

// forbids reports whether the producer admits no object holding property
// k, and whether that is certain.
func (c *checker) forbids(va view, k string) (yes, certain bool) {
	ap, unc := c.propertyPartsUnc(c.a, va, k, false, false)
	if len(unc) > 0 {
		return false, false
	}
	if len(ap) == 0 {
		return false, true
	}
	v := c.flatten(c.a, ap)
	if len(v.bad) > 0 {
		return false, false
	}
	if v.never || c.factsOf(v).types == 0 {
		return true, true
	}
	return false, c.inhabited(c.a, ap)
}

// dependencyLost decides one accepting dependentRequired entry k → d: ""
// when every producer object holding k holds d (d is required, implied
// through the producer's own dependentRequired, or k is never present),
// Incompatible when an object holding k and not d is valid for the
// producer (the property k admits a value, nothing requires d, and no
// maxProperties or listed values stand in the way), Unknown otherwise.
func (c *checker) dependencyLost(va view, f facts, k, d string) Verdict {
	if k == d {
		return ""
	}
	closure := requiredClosure(va, f, k)
	if closure[d] {
		return ""
	}
	if f.hasEnum {
		c.chargeValues(len(f.enum), 0)
		for _, x := range f.enum {
			if o, ok := x.(map[string]any); ok {
				_, hasK := o[k]
				_, hasD := o[d]
				if hasK && !hasD {
					return Unknown // listed objects are not checked against the producer
				}
			}
		}
		return ""
	}
	no, certain := c.forbids(va, k)
	switch {
	case no:
		return ""
	case !certain:
		return Unknown
	}
	for name := range closure {
		if name == k || f.required[name] {
			continue
		}
		// An instance with k must hold more than the required
		// properties: their values are not proven to exist.
		if no, certain := c.forbids(va, name); no || !certain {
			return Unknown
		}
	}
	if f.maxProps != nil && big.NewRat(int64(len(closure)), 1).Cmp(f.maxProps) > 0 {
		return Unknown
	}
	return Incompatible
}

// notKeyword decides an accepting "not": compatible when the producer is
// proven disjoint from the negated schema; incompatible when a producer
// instance is proven to match it (the producer is inside it and
// inhabited, or it is inside the producer and inhabited).
func (c *checker) notKeyword(va view, p part) []Finding {
	ch, ok := p.n.child("not")
	if !ok {
		return []Finding{finding(Unknown, "invalid_keyword", p, "not", "")}
	}
	neg := []part{{n: ch, path: p.path + "/not", scope: -3}}
	if c.disjoint(c.a, va.parts, c.b, neg) {
		return nil
	}
	if (c.proven(va.parts, neg) && c.inhabited(c.a, va.parts)) || (c.reverse(neg, va.parts) && c.inhabited(c.b, neg)) {
		return []Finding{finding(Incompatible, "not_matched", p, "not", "an instance valid for the producer matches the negated schema")}
	}
	return []Finding{finding(Unknown, "undecided_keyword", p, "not", "the producer is not proven disjoint from the negated schema")}
}

// ifThenElse decides an accepting if/then/else where the producer settles
// the condition: every producer instance is proven to pass "if" (then
// "then" applies to all of them) or proven disjoint from it ("else"
// applies). Findings of the applying branch are the verdict.
func (c *checker) ifThenElse(va view, p part) []Finding {
	cond, ok := p.n.child("if")
	if !ok {
		return []Finding{finding(Unknown, "invalid_keyword", p, "if", "")}
	}
	ifPart := []part{{n: cond, path: p.path + "/if", scope: -3}}
	branch := ""
	switch {
	case c.proven(va.parts, ifPart):
		branch = "then"
	case c.disjoint(c.a, va.parts, c.b, ifPart):
		branch = "else"
	default:
		return []Finding{finding(Unknown, "undecided_keyword", p, "if", "the producer does not settle the condition")}
	}
	ch, ok := p.n.child(branch)
	if !ok {
		return nil // absent then/else accepts everything
	}
	return c.subset(va.parts, []part{{n: ch, path: p.path + "/" + branch, scope: p.scope}})
}

// dependentSchemas decides an accepting dependentSchemas: each entry k → S
// holds when the producer never holds k or every object instance
// of the producer holding k is valid under S; otherwise the findings of
// that comparison are the verdict.
func (c *checker) dependentSchemas(va view, f facts, p part) []Finding {
	deps, ok := p.n.v.(map[string]any)["dependentSchemas"].(map[string]any)
	if !ok {
		return []Finding{finding(Unknown, "invalid_keyword", p, "dependentSchemas", "")}
	}
	if f.types&tObject == 0 {
		return nil
	}
	var out []Finding
	for _, k := range slices.Sorted(maps.Keys(deps)) {
		ch, ok := p.n.child("dependentSchemas", k)
		if !ok {
			continue
		}
		no, certain := c.forbids(va, k)
		if no {
			continue
		}
		// Only the producer's objects holding k are subject to S.
		holding := append(append([]part(nil), va.parts...), synthPart("dependent:"+k, map[string]any{"type": "object", "required": []any{k}}))
		sub := c.subset(holding, []part{{n: ch, path: p.path + "/dependentSchemas/" + escape(k), scope: p.scope}})
		if !certain {
			// A value of k is not proven to exist: no loss is proven.
			sub = uncertain(sub)
		}
		out = append(out, sub...)
	}
	return out
}

// synthPart is a synthetic producer conjunct (a type, a required
// property) used to restrict a producer; name keeps its identity apart.
func synthPart(name string, m map[string]any) part {
	d := &document{key: "\x00" + name, base: "ampbundle:///", root: m}
	return part{n: mkNode(d, "", d.base, d.root), path: "", scope: -2}
}

// sameGroup reports whether one producer part carries the same values as
// the acceptor part m for every keyword of group (each absent on both or
// equal, with no reference inside): keywords that only assert together
// ("if" with "then" and "else", "contains" with "minContains" and
// "maxContains") are compared together.
func (c *checker) sameGroup(va view, m map[string]any, group ...string) bool {
	for _, kw := range group {
		if !c.holdsNoRef(m[kw]) {
			return false
		}
	}
	// One walk over every producer part, a value each keyword of the
	// group looked up, and the values compared, charged once as
	// sameKeyword's (COMPAT-16).
	left, start := c.walkLeft()
	found := false
	for _, p := range va.parts {
		if found = groupEqualWithin(p.n.v.(map[string]any), m, group, &left); found || left < 0 {
			break
		}
	}
	c.leafWalked += start - left
	return c.chargeWalk(start, left) && found && left >= 0
}

// groupEqualWithin reports whether producer part pm carries the same
// values as acceptor part m for every keyword of group, each lookup a
// value of left and each comparison its values (equalWithin).
func groupEqualWithin(pm, m map[string]any, group []string, left *int) bool {
	for _, kw := range group {
		if *left--; *left < 0 {
			return false
		}
		x, okx := pm[kw]
		y, oky := m[kw]
		if okx != oky || (okx && !equalWithin(x, y, left)) {
			return false
		}
	}
	return true
}

// maxSplit bounds how many listed values a producer is split into.
const maxSplit = 64

// MaxSplits bounds the producer conjunctions one check splits for unions
// (by listed value or type); beyond, a union that needs a split is not
// decided (Unknown).
const MaxSplits = 256

// restrictions splits the producing conjunction for a union: one
// conjunction per listed value when it lists at most maxSplit, else one
// per type it admits (integers, then every number). ok is false once the
// check has split MaxSplits conjunctions: the caller must then decide
// nothing from the split.
func (c *checker) restrictions(va view, f facts) (out [][]part, ok bool) {
	defer func() {
		c.splits += len(out)
		if c.splits > MaxSplits {
			out, ok = nil, false
		}
	}()
	if f.hasEnum && len(f.enum) <= maxSplit {
		for _, v := range f.enum {
			b, err := json.Marshal(v)
			if err != nil {
				out = nil
				break
			}
			out = append(out, append(append([]part(nil), va.parts...), synthPart("const:"+string(b), map[string]any{"const": v})))
		}
		if out != nil {
			return out, true
		}
	}
	for _, t := range []typeSet{tNull, tBool, tObject, tArray, tInt, tFrac, tString} {
		if f.types&t == 0 {
			continue
		}
		name := t.String()
		if t == tFrac {
			name = "number"
		}
		out = append(out, append(append([]part(nil), va.parts...), typePart(name)))
	}
	return out, true
}

// soleBranchLoss finds a part of the producer (a listed value or a type)
// that only one branch of the union can accept, every other branch being
// proven disjoint from it, and that this branch is proven to lose: the
// union loses that instance too. It returns the branch's incompatible
// findings, or nil.
func (c *checker) soleBranchLoss(va view, f facts, branches []part) []Finding {
	rs, _ := c.restrictions(va, f)
	for _, r := range rs {
		sole, n := -1, 0
		for i, br := range branches {
			if !c.disjoint(c.a, r, c.b, []part{br}) {
				sole, n = i, n+1
			}
		}
		if n != 1 {
			continue
		}
		var lost []Finding
		for _, x := range c.subset(r, []part{branches[sole]}) {
			if x.Verdict == Incompatible {
				lost = append(lost, x)
			}
		}
		if len(lost) > 0 {
			return lost
		}
	}
	return nil
}

// integersListed decides a listed-values keyword (enum, const) against a
// producer of integers in a bounded range: "" when every integer of the
// range (that meets the producer's multipleOf) is listed, Incompatible
// when one is not, Unknown when the range holds more than maxSplit*16
// integers.
func (c *checker) integersListed(f facts, allowed *listed) Verdict {
	lo := ceilRat(f.lower.r)
	if f.lower.excl && f.lower.r.IsInt() {
		lo.Add(lo, big.NewInt(1))
	}
	hi := floorRat(f.upper.r)
	if f.upper.excl && f.upper.r.IsInt() {
		hi.Sub(hi, big.NewInt(1))
	}
	if lo.Cmp(hi) > 0 {
		return ""
	}
	if new(big.Int).Sub(hi, lo).Cmp(big.NewInt(maxSplit*16)) >= 0 {
		return Unknown
	}
	c.chargeValues(int(new(big.Int).Sub(hi, lo).Int64())+1, 0)
	for i := new(big.Int).Set(lo); i.Cmp(hi) <= 0; i.Add(i, big.NewInt(1)) {
		r := new(big.Rat).SetInt(i)
		ok := true
		for _, m := range f.mults {
			if !new(big.Rat).Quo(r, m).IsInt() {
				ok = false
				break
			}
		}
		if ok && !allowed.has(canonKey(json.Number(i.String()))) {
			return Incompatible
		}
	}
	return ""
}

// exclusiveBranch reports whether branch i of the producer's union kw of p
// is proven disjoint from each of its other n-1 branches: an instance of
// it then matches that branch alone, so it is an instance of a producing
// oneOf.
func (c *checker) exclusiveBranch(p part, kw string, n, i int) bool {
	bi, ok := p.n.child(kw, strconv.Itoa(i))
	if !ok {
		return false
	}
	for j := 0; j < n; j++ {
		bj, ok := p.n.child(kw, strconv.Itoa(j))
		if j == i {
			continue
		}
		if !ok || !c.disjoint(c.a, []part{{n: bi}}, c.a, []part{{n: bj}}) {
			return false
		}
	}
	return true
}
