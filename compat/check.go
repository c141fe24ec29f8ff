package compat

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// Verdict is the outcome of one check.
type Verdict string

// Verdicts. Unknown is what the checker could not decide; it is never
// read as compatible.
const (
	Compatible   Verdict = "compatible"
	Incompatible Verdict = "incompatible"
	Unknown      Verdict = "unknown"
)

// Finding is one reason a check is not Compatible.
type Finding struct {
	// Verdict is Incompatible (the rule proves an instance is lost) or
	// Unknown (the checker cannot decide here).
	Verdict Verdict `json:"verdict"`
	// Rule names the change (docs/FORMAT.md lists the rules).
	Rule string `json:"rule"`
	// Pointer is the keyword location in the accepting schema, from its
	// root, through "$ref" and "allOf" as JSON Schema output formats
	// write it ("/properties/lang/$ref/enum").
	Pointer string `json:"pointer"`
	// Artifact and At locate that keyword: the artifact key and the JSON
	// pointer inside that artifact.
	Artifact string `json:"artifact,omitempty"`
	At       string `json:"at,omitempty"`
	// Detail says what was compared (a property name, a bound), in the
	// checker's words; it quotes no instance data.
	Detail string `json:"detail,omitempty"`
}

// Report is the result of one check: Compatible with no findings, or the
// findings, sorted by pointer and rule.
type Report struct {
	Verdict  Verdict   `json:"verdict"`
	Findings []Finding `json:"findings,omitempty"`
}

// Source is one bundle's schemas as the checker reads them: the loader and
// a cache of parsed documents. It is safe for concurrent use; reuse one
// Source for every check over the same bundle.
type Source struct {
	s *side
}

// NewSource wraps a Loader.
func NewSource(l Loader) *Source { return &Source{s: newSide(l)} }

// Subsumes reports whether every instance valid under producer is valid
// under acceptor. The input side of a capability is backward compatible
// when Subsumes(oldInput, newInput) is Compatible; the output side is
// forward compatible when Subsumes(newOutput, oldOutput) is Compatible.
// Findings point into the acceptor.
func Subsumes(producerSrc *Source, producerKey string, acceptorSrc *Source, acceptorKey string) Report {
	return subsumes(producerSrc, producerKey, acceptorSrc, acceptorKey, nil, nil)
}

// subsumes is Subsumes taking its comparisons from budget too, when not
// nil (MatrixOf), and adding what the check read of listed values to
// reads, when not nil (the tests read it).
func subsumes(producerSrc *Source, producerKey string, acceptorSrc *Source, acceptorKey string, budget *int, reads *valueReads) Report {
	if producerSrc == nil || acceptorSrc == nil {
		return Report{Verdict: Unknown, Findings: []Finding{{Verdict: Unknown, Rule: "unreadable_schema", Detail: "no schema source"}}}
	}
	c := &checker{a: producerSrc.s, b: acceptorSrc.s, memo: map[string]int{}, assumed: maxInt, budget: budget}
	r := c.run(producerKey, acceptorKey)
	if reads != nil {
		reads.add(c.reads)
	}
	return r
}

// Backward checks the input side: every request valid for the old input
// schema is valid for the new one.
func Backward(oldSrc *Source, oldKey string, newSrc *Source, newKey string) Report {
	return Subsumes(oldSrc, oldKey, newSrc, newKey)
}

// Forward checks the output side: every result valid for the new output
// schema is valid for the old one.
func Forward(oldSrc *Source, oldKey string, newSrc *Source, newKey string) Report {
	return Subsumes(newSrc, newKey, oldSrc, oldKey)
}

// part is one schema object of a conjunction, with the keyword location
// that reached it and the scope (root of the conjunction) it belongs to,
// which is what unevaluatedProperties sees.
type part struct {
	n     node
	path  string
	scope int
}

// view is a flattened conjunction: every schema object reached through
// "$ref" and "allOf", whether one of them is false, and references that
// could not be resolved.
type view struct {
	parts []part
	never bool
	fpath string // where the false is
	bad   []Finding
}

type checker struct {
	a, b  *side
	steps int
	// work counts the passes over listed values (chargeValues), bounded
	// by MaxValueWork apart from the steps, so that a check which stayed
	// within MaxSteps before lists were charged keeps its verdict.
	work  int
	depth int
	over  bool
	memo  map[string]int // depth while in progress, provenMark once proven
	// ids numbers the scopes and nodes memo keys name (memoKey), and
	// bases each base they are under, so that ids keeps one copy of a
	// base however many nodes are under it.
	ids   map[partID]int
	bases map[string]int
	// assumed is the lowest depth of an in-progress pair assumed by the
	// current computation.
	assumed int
	regexp  map[string]*pattern
	// splits counts the producer conjunctions split for unions (by
	// listed value or type); beyond MaxSplits, unions are not split.
	splits int
	// own holds the schema each part with unevaluatedProperties heads
	// (ownSchema), flattened once per check.
	own map[ownKey]view
	// budget, when not nil, is what is left of the comparisons every
	// check of one matrix shares (MatrixOf); each step takes one.
	budget *int
	// reads counts what the check read of listed values (valueReads):
	// the tests read it.
	reads valueReads
	// flattened counts the parts flatten put in conjunctions,
	// leafWalked the values sameLeaf's walks visited (equalValues,
	// holdsNoRef), ownWalked the parts of own schemas evaluatedIn passed
	// over: the tests read and bound them.
	flattened, leafWalked, ownWalked int
	// keywordsVisited counts the members keywords visited (looked up or
	// sorted): the tests bound it.
	keywordsVisited int
	// lookups counts what chargeLookups charged: parts looked up for a
	// property name or an item index, patterns matched against a name,
	// own-schema parts passed over; the tests read and bound it.
	lookups int
	// matchWork counts a pattern's instructions × the bytes of each string
	// matched against it, over the check, so that many small matches add
	// up (match) instead of each rounding down to nothing.
	matchWork int
}

// spent reports whether the shared budget of c is used up.
func (c *checker) spent() bool { return c.budget != nil && *c.budget < 0 }

const (
	// provenMark marks a memoised proof; in-progress entries hold their
	// depth (>= 0).
	provenMark = -1
	maxInt     = int(^uint(0) >> 1)
)

func (c *checker) run(aKey, bKey string) Report {
	var fs []Finding
	da, ea := c.a.load(aKey)
	db, eb := c.b.load(bKey)
	switch {
	case ea != "":
		fs = []Finding{{Verdict: Unknown, Rule: "unreadable_schema", Pointer: "", Detail: ea}}
	case eb != "":
		fs = []Finding{{Verdict: Unknown, Rule: "unreadable_schema", Pointer: "", Artifact: bKey, Detail: eb}}
	default:
		ra := part{n: mkNode(da, "", da.base, da.root)}
		rb := part{n: mkNode(db, "", db.base, db.root)}
		fs = c.subset([]part{ra}, []part{rb})
	}
	return report(fs)
}

// report sorts, deduplicates and summarises findings.
func report(fs []Finding) Report {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].Pointer != fs[j].Pointer {
			return fs[i].Pointer < fs[j].Pointer
		}
		if fs[i].Rule != fs[j].Rule {
			return fs[i].Rule < fs[j].Rule
		}
		if fs[i].Verdict != fs[j].Verdict {
			return fs[i].Verdict < fs[j].Verdict
		}
		return fs[i].Detail < fs[j].Detail
	})
	out := fs[:0]
	for i, f := range fs {
		if i > 0 && f == fs[i-1] {
			continue
		}
		out = append(out, f)
	}
	r := Report{Verdict: Compatible}
	if len(out) > 0 {
		r.Findings = out
		r.Verdict = Unknown
		for _, f := range out {
			if f.Verdict == Incompatible {
				r.Verdict = Incompatible
				break
			}
		}
	}
	return r
}

// finding builds a finding at keyword kw of part p.
func finding(v Verdict, rule string, p part, kw string, format string, args ...any) Finding {
	f := Finding{Verdict: v, Rule: rule, Pointer: p.path, Artifact: p.n.doc.key, At: p.n.ptr}
	if kw != "" {
		f.Pointer += "/" + escape(kw)
		f.At += "/" + escape(kw)
	}
	if format != "" {
		f.Detail = fmt.Sprintf(format, args...)
	}
	return f
}

// flatten expands "$ref" and "allOf" of each root into one conjunction.
// Each part it reaches costs the check a unit of work, and a unit more
// per valuesPerStep of its members (chargeValues), so a conjunction met
// at many steps counts at each; once the check's work or the matrix's
// budget is spent it stops, the view too_complex.
func (c *checker) flatten(s *side, roots []part) view {
	var v view
	type seenKey struct {
		scope          int
		base, key, ptr string // node.id
	}
	seen := map[seenKey]struct{}{}
	var walk func(p part)
	walk = func(p part) {
		key := seenKey{p.scope, p.n.base, p.n.doc.key, p.n.ptr}
		if _, ok := seen[key]; ok {
			return
		}
		if len(seen) > maxConjunction {
			if len(v.bad) == 0 {
				v.bad = append(v.bad, finding(Unknown, "too_complex", p, "", "more than %d schemas in one conjunction", maxConjunction))
			}
			return
		}
		if c.work > MaxValueWork || c.spent() {
			if len(v.bad) == 0 {
				v.bad = append(v.bad, c.tooComplex(p))
			}
			return
		}
		seen[key] = struct{}{}
		c.flattened++
		m, _ := p.n.v.(map[string]any)
		c.chargeValues(len(m), 1) // the checker passes over its members
		switch x := p.n.v.(type) {
		case bool:
			if !x && !v.never {
				v.never, v.fpath = true, p.path
			}
			return
		case map[string]any:
			v.parts = append(v.parts, p)
			if r, ok := x["$ref"].(string); ok {
				t, e := s.resolve(p.n, r)
				if e != "" {
					v.bad = append(v.bad, finding(Unknown, "unresolved_ref", p, "$ref", "%s", e))
				} else {
					walk(part{n: t, path: p.path + "/$ref", scope: p.scope})
				}
			}
			if all, ok := x["allOf"].([]any); ok {
				for i := range all {
					if ch, ok := p.n.child("allOf", strconv.Itoa(i)); ok {
						walk(part{n: ch, path: p.path + "/allOf/" + strconv.Itoa(i), scope: p.scope})
					}
				}
			}
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return v
}

// maxConjunction bounds the schemas flatten puts in one conjunction.
const maxConjunction = 4096

// tooComplex is the finding of a check past its bounds, at part p: the
// matrix's budget spent, or the check's own.
func (c *checker) tooComplex(p part) Finding {
	if c.spent() {
		return finding(Unknown, "too_complex", p, "", "the matrix's comparison budget is spent")
	}
	return finding(Unknown, "too_complex", p, "", "the comparison exceeds the checker's bounds")
}

// partID names a part in checker.ids: its scope, the number of its base
// (checker.bases), its artifact and its pointer; building one joins no
// text.
type partID struct {
	scope, base int
	key, ptr    string
}

// memoKey names the pair of conjunctions a and b in the memo: each part
// by a number the check gives its scope and node (ids), in order, so
// that a key costs a few bytes a part however long the parts' pointers
// and bases are (MaxPointerBytes), and the memo, one key a step, stays
// small.
func (c *checker) memoKey(a, b []part) string {
	if c.ids == nil {
		c.ids, c.bases = map[partID]int{}, map[string]int{}
	}
	buf := binary.AppendUvarint(nil, uint64(len(a)))
	ids := func(ps []part) {
		ns := make([]int, len(ps))
		for i, p := range ps {
			b, ok := c.bases[p.n.base]
			if !ok {
				b = len(c.bases)
				c.bases[p.n.base] = b
			}
			k := partID{scope: p.scope, base: b, key: p.n.doc.key, ptr: p.n.ptr}
			n, ok := c.ids[k]
			if !ok {
				n = len(c.ids)
				c.ids[k] = n
			}
			ns[i] = n
		}
		slices.Sort(ns)
		for _, n := range ns {
			buf = binary.AppendUvarint(buf, uint64(n))
		}
	}
	ids(a) // len(a) first: where a ends is never in doubt
	ids(b)
	return string(buf)
}

// subset returns the findings that keep "every instance of the
// conjunction a is valid under the conjunction b" from being proven; none
// means proven.
func (c *checker) subset(a, b []part) []Finding {
	if len(b) == 0 {
		return nil
	}
	c.steps++
	if c.budget != nil {
		*c.budget--
	}
	if c.steps > MaxSteps || c.work > MaxValueWork || c.depth > MaxDepth || c.spent() || pathPast(a, b) {
		if !c.over {
			c.over = true
			return []Finding{c.tooComplex(b[0])}
		}
		return []Finding{{Verdict: Unknown, Rule: "too_complex"}}
	}
	key := c.memoKey(a, b)
	if m, ok := c.memo[key]; ok {
		if m >= 0 {
			// In progress at depth m: assumed while it is being proven
			// (coinduction; sound because instances are finite). What
			// is proven under this assumption is only remembered once
			// the assumption itself is proven.
			c.assumed = min(c.assumed, m)
		}
		return nil
	}
	if len(a) == 1 && len(b) == 1 && c.sameLeaf(a[0].n.v, b[0].n.v) {
		// Proven once for the pair: a pair met again (the same
		// subschema reached through many references) is not walked
		// again.
		c.memo[key] = provenMark
		return nil
	}
	my := c.depth
	c.memo[key] = my
	saved := c.assumed
	c.assumed = maxInt
	c.depth++
	fs := keepFindings(c.subsetOnce(a, b))
	c.depth--
	if len(fs) == 0 && c.assumed >= my {
		c.memo[key] = provenMark
	} else {
		delete(c.memo, key)
	}
	if c.assumed >= my {
		c.assumed = saved
	} else {
		c.assumed = min(saved, c.assumed)
	}
	return fs
}

// pathPast reports whether a part of a or b was reached by an evaluation
// path longer than MaxPathBytes: each finding below would hold it.
func pathPast(a, b []part) bool {
	for _, ps := range [][]part{a, b} {
		for _, p := range ps {
			if len(p.path) > MaxPathBytes {
				return true
			}
		}
	}
	return false
}

// keepFindings keeps the first MaxFindings of fs, the first Incompatible
// one among them when fs has one: what a comparison returns, so the
// findings a check holds stay bounded (a failing pair met at many paths
// is compared at each) and its verdict is unchanged.
func keepFindings(fs []Finding) []Finding {
	if len(fs) <= MaxFindings {
		return fs
	}
	kept := slices.Clone(fs[:MaxFindings])
	if !slices.ContainsFunc(kept, func(f Finding) bool { return f.Verdict == Incompatible }) {
		if i := slices.IndexFunc(fs, func(f Finding) bool { return f.Verdict == Incompatible }); i >= 0 {
			kept[MaxFindings-1] = fs[i]
		}
	}
	return kept
}

func (c *checker) subsetOnce(a, b []part) []Finding {
	va := c.flatten(c.a, a)
	if len(va.bad) > 0 {
		// A producer reference that names nothing in the bundle: the
		// schema cannot be used, and nothing is claimed about it.
		out := make([]Finding, len(va.bad))
		for i, f := range va.bad {
			f.Detail = "in the producing schema: " + f.Detail
			out[i] = f
		}
		return out
	}
	if va.never {
		return nil
	}
	vb := c.flatten(c.b, b)
	if len(vb.bad) > 0 {
		return vb.bad
	}
	fs := c.direct(va, vb)
	if len(fs) == 0 {
		return nil
	}
	// A union on the producing side: every branch must be covered.
	have := unionBranches(va.parts)
	for _, p := range va.parts {
		m := p.n.v.(map[string]any)
		for _, kw := range []string{"anyOf", "oneOf"} {
			branches, ok := m[kw].([]any)
			if !ok || expanded(have, p, kw, len(branches)) {
				continue
			}
			var all []Finding
			for i := range branches {
				br, ok := p.n.child(kw, strconv.Itoa(i))
				if !ok {
					continue
				}
				ext := append(append([]part(nil), a...), part{n: br, path: p.path + "/" + kw + "/" + strconv.Itoa(i), scope: -1})
				sub := c.subset(ext, b)
				if kw == "oneOf" && len(sub) > 0 && !c.exclusiveBranch(p, kw, len(branches), i) {
					// An instance of this branch that also matches
					// another is not a producer instance: a loss is
					// possible, not proven.
					sub = uncertain(sub)
				}
				all = append(all, sub...)
			}
			return all
		}
	}
	if len(a) == 1 && len(b) == 1 {
		fs = refChanged(c, a[0], b[0], fs)
	}
	return fs
}

// refChanged adds a ref_target_changed finding when both sides are a
// reference to different targets and the targets differ in meaning.
func refChanged(c *checker, a, b part, fs []Finding) []Finding {
	ma, ok1 := a.n.v.(map[string]any)
	mb, ok2 := b.n.v.(map[string]any)
	if !ok1 || !ok2 {
		return fs
	}
	ra, ok1 := ma["$ref"].(string)
	rb, ok2 := mb["$ref"].(string)
	if !ok1 || !ok2 {
		return fs
	}
	ta, e1 := c.a.resolve(a.n, ra)
	tb, e2 := c.b.resolve(b.n, rb)
	if e1 != "" || e2 != "" || ta.doc.key+"#"+ta.ptr == tb.doc.key+"#"+tb.ptr {
		return fs
	}
	v := Unknown
	for _, f := range fs {
		if f.Verdict == Incompatible {
			v = Incompatible
		}
	}
	return append(fs, finding(v, "ref_target_changed", b, "$ref", "the reference now names %s#%s", tb.doc.key, tb.ptr))
}

// facts are what the producing conjunction guarantees.
type facts struct {
	types    typeSet
	enum     []any         // nil: not finite
	info     []listedValue // of each value of enum (listedOf)
	hasEnum  bool
	lower    *bound
	upper    *bound
	mults    []*big.Rat
	minLen   *big.Rat
	maxLen   *big.Rat
	patterns map[string]bool
	formats  map[string]bool
	minItems *big.Rat
	maxItems *big.Rat
	unique   bool
	minProps *big.Rat
	maxProps *big.Rat
	required map[string]bool
	// opaque: the producer has assertions the checker does not use;
	// a rule's "incompatible" is then only "unknown".
	opaque bool
}

type bound struct {
	r    *big.Rat
	excl bool
}

// opaqueKeywords restrict the producer in ways the checker ignores
// (ignoring a producer constraint is sound, but makes "incompatible"
// uncertain).
var opaqueKeywords = []string{"not", "if", "dependentSchemas", "dependentRequired", "propertyNames",
	"contains", "$dynamicRef", "$recursiveRef", "unevaluatedItems", "patternProperties"}

func maxRat(a, b *big.Rat) *big.Rat {
	if a == nil || (b != nil && b.Cmp(a) > 0) {
		return b
	}
	return a
}

func minRat(a, b *big.Rat) *big.Rat {
	if a == nil || (b != nil && b.Cmp(a) < 0) {
		return b
	}
	return a
}

// factsOf is what every instance the producer view va admits is known
// to satisfy: the conjunction of its parts' assertions (addPart), then
// the listed values narrowed to the admitted types and the types to
// those of the listed values.
func (c *checker) factsOf(va view) facts {
	f := facts{types: tAll}
	passed := 0
	for _, p := range va.parts {
		passed += f.addPart(p, &c.reads)
	}
	if f.hasEnum {
		passed += len(f.enum)
		var t typeSet
		var keep []any
		var info []listedValue
		for i, x := range f.enum {
			if xt := f.info[i].t; xt&f.types != 0 || (xt == tInt && f.types&tInt != 0) {
				keep = append(keep, x)
				info = append(info, f.info[i])
				t |= xt
			}
		}
		f.enum, f.info = keep, info
		f.types &= t
	}
	c.chargeValues(passed, 0)
	return f
}

// addPart adds what one part (an object schema m) asserts: its types,
// listed values (addListed), numeric and length bounds, patterns and
// formats, counts and required members (addCounts); a keyword the
// checker does not use makes the facts opaque. It returns how many listed
// values it passed over; a list read is counted in reads.
func (f *facts) addPart(p part, reads *valueReads) int {
	m := p.n.v.(map[string]any)
	if t, ok := m["type"]; ok {
		if ts, ok := typeOfKeyword(t); ok {
			f.types &= ts
		}
	}
	passed := f.addListed(p, reads)
	if r, ok := ratOf(m["minimum"]); ok {
		f.lower = tighterLower(f.lower, &bound{r: r})
	}
	if r, ok := ratOf(m["exclusiveMinimum"]); ok {
		f.lower = tighterLower(f.lower, &bound{r: r, excl: true})
	}
	if r, ok := ratOf(m["maximum"]); ok {
		f.upper = tighterUpper(f.upper, &bound{r: r})
	}
	if r, ok := ratOf(m["exclusiveMaximum"]); ok {
		f.upper = tighterUpper(f.upper, &bound{r: r, excl: true})
	}
	if r, ok := ratOf(m["multipleOf"]); ok && r.Sign() > 0 {
		f.mults = append(f.mults, r)
	}
	if r, ok := intOf(m["minLength"]); ok {
		f.minLen = maxRat(f.minLen, r)
	}
	if r, ok := intOf(m["maxLength"]); ok {
		f.maxLen = minRat(f.maxLen, r)
	}
	if s, ok := m["pattern"].(string); ok {
		f.patterns = setAdd(f.patterns, s)
	}
	if s, ok := m["format"].(string); ok {
		f.formats = setAdd(f.formats, s)
	}
	f.addCounts(m)
	for _, kw := range opaqueKeywords {
		if _, ok := m[kw]; ok {
			f.opaque = true
		}
	}
	return passed
}

// addListed intersects the listed values with the part's enum or const
// (const wins when both are given), by their canonical forms (listedOf).
// It returns how many listed values it passed over; a list read is
// counted in reads.
func (f *facts) addListed(p part, reads *valueReads) int {
	l := partListed(p, reads)
	if l == nil {
		return 0
	}
	if !f.hasEnum {
		f.enum, f.info, f.hasEnum = slices.Clone(l.vals), slices.Clone(l.info), true
		return len(l.vals)
	}
	var keep []any
	var info []listedValue
	for i, x := range f.enum {
		if l.has(f.info[i].key) {
			keep = append(keep, x)
			info = append(info, f.info[i])
		}
	}
	passed := len(f.enum)
	f.enum, f.info = keep, info
	return passed
}

// addCounts adds the part's item and property counts, uniqueness and
// required members.
func (f *facts) addCounts(m map[string]any) {
	if r, ok := intOf(m["minItems"]); ok {
		f.minItems = maxRat(f.minItems, r)
	}
	if r, ok := intOf(m["maxItems"]); ok {
		f.maxItems = minRat(f.maxItems, r)
	}
	if u, ok := m["uniqueItems"].(bool); ok && u {
		f.unique = true
	}
	if r, ok := intOf(m["minProperties"]); ok {
		f.minProps = maxRat(f.minProps, r)
	}
	if r, ok := intOf(m["maxProperties"]); ok {
		f.maxProps = minRat(f.maxProps, r)
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				f.required = setAdd(f.required, s)
			}
		}
	}
}

func tighterLower(a, b *bound) *bound {
	if a == nil {
		return b
	}
	switch c := b.r.Cmp(a.r); {
	case c > 0:
		return b
	case c == 0 && b.excl:
		return b
	}
	return a
}

func tighterUpper(a, b *bound) *bound {
	if a == nil {
		return b
	}
	switch c := b.r.Cmp(a.r); {
	case c < 0:
		return b
	case c == 0 && b.excl:
		return b
	}
	return a
}

// annotation and structural keywords that assert nothing by themselves.
var ignored = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$defs": true, "definitions": true,
	"$comment": true, "$vocabulary": true, "title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "contentEncoding": true, "contentMediaType": true,
	"contentSchema": true, "$ref": true, "allOf": true, "then": true, "else": true,
	// handled as groups
	"properties": true, "additionalProperties": true, "patternProperties": true, "unevaluatedProperties": true,
	"items": true, "prefixItems": true,
	// handled with contains
	"minContains": true, "maxContains": true,
	// what "$recursiveRef" resolves to, which is undecided
	"$recursiveAnchor": true,
}

// decided keywords: compared by a rule of their own (keywordsA,
// keywordsB, keywordsC, union, objects, arrays, flatten). Every keyword
// the validator compiles is in ignored, decided or undecided; any other
// is an annotation (TestEveryLibraryKeywordIsModelled).
var decided = map[string]bool{
	"type": true, "enum": true, "const": true, "minimum": true, "exclusiveMinimum": true, "maximum": true,
	"exclusiveMaximum": true, "multipleOf": true, "minLength": true, "maxLength": true, "pattern": true,
	"format": true, "minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	"uniqueItems": true, "required": true, "dependentRequired": true, "anyOf": true, "oneOf": true,
}

// comparedKeywords are the keywords that keywords compares (decided and
// undecided), in name order. A part is looked up for each of them, or,
// when it has fewer members, its members are sorted: a step costs a
// few dozen lookups a part however many members the part has. Sorting
// every member of every acceptor part at every step, annotations and
// unknown keywords included, cost 64 members' sort for the unit of work
// flatten charges them (an object of 60,000 unknown keywords behind a
// "$ref" met from many properties: about 14 µs a unit of work, 3 to 10
// times any other kind; docs/SPEC-DECISIONS.md COMPAT-20).
var comparedKeywords = slices.Sorted(func(yield func(string) bool) {
	for _, set := range []map[string]bool{decided, undecided} {
		for kw := range set {
			if !yield(kw) {
				return
			}
		}
	}
})

// undecided keywords: accepted only when a producer part carries the same
// value (and it holds no reference).
var undecided = map[string]bool{
	"not": true, "if": true, "dependentSchemas": true, "propertyNames": true, "contains": true,
	"unevaluatedItems": true, "$dynamicRef": true, "$recursiveRef": true,
	"dependencies": true, "additionalItems": true,
	// jsonschema v5.3.1's own keyword, compiled in every draft: with
	// true, every member name must compile as a regular expression.
	"regexProperties": true,
}

// itemEvaluating are the keywords of a schema object whose evaluation
// decides which items its "unevaluatedItems" sees as evaluated: the item
// keywords and every in-place applicator ("$ref", "$dynamicRef" and
// "$recursiveRef" must be absent: their targets are not the same by
// text). "unevaluatedItems" is accepted only when one producer part
// carries the same value for each of them (sameGroup).
var itemEvaluating = []string{"unevaluatedItems", "prefixItems", "items", "additionalItems", "contains",
	"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
	"$ref", "$dynamicRef", "$recursiveRef"}

// noneOf reports whether m carries none of the keywords kws.
func noneOf(m map[string]any, kws ...string) bool {
	for _, kw := range kws {
		if _, ok := m[kw]; ok {
			return false
		}
	}
	return true
}

func (c *checker) direct(va, vb view) []Finding {
	if vb.never {
		p := part{n: vb.parts0(), path: vb.fpath}
		return []Finding{{Verdict: Incompatible, Rule: "schema_false", Pointer: vb.fpath, Artifact: p.n.docKey()}}
	}
	f := c.factsOf(va)
	var fs []Finding
	if f.types == 0 {
		return nil // the producer admits nothing
	}
	for _, p := range vb.parts {
		m := p.n.v.(map[string]any)
		fs = append(fs, c.keywords(va, f, p, m)...)
	}
	if f.types&tObject != 0 && !f.hasEnum {
		fs = append(fs, c.objects(va, vb, f)...)
	} else if f.types&tObject != 0 && hasAnyKeyword(vb, "properties", "additionalProperties", "patternProperties", "unevaluatedProperties") {
		fs = append(fs, finding(Unknown, "enum_not_checked", vb.parts[0], "", "listed objects are not checked"))
	}
	if f.types&tArray != 0 && !f.hasEnum {
		fs = append(fs, c.arrays(va, vb, f)...)
	} else if f.types&tArray != 0 && hasAnyKeyword(vb, "items", "prefixItems") {
		fs = append(fs, finding(Unknown, "enum_not_checked", vb.parts[0], "", "listed arrays are not checked"))
	}
	for i := range fs {
		if fs[i].Verdict == Incompatible && f.opaque {
			fs[i].Verdict = Unknown
		}
	}
	return fs
}

// keywords checks each keyword of the consumer's part p (an object
// schema, its members in name order) against the producer view va with
// facts f, for direct; producer-side uncertainty turns incompatible into
// unknown. Only the keywords it compares are visited (comparedKeywords):
// any other member asserts nothing here.
func (c *checker) keywords(va view, f facts, p part, m map[string]any) []Finding {
	var fs []Finding
	add := func(x Finding) {
		if x.Verdict == Incompatible && f.opaque {
			x.Verdict = Unknown
		}
		fs = append(fs, x)
	}
	kws := comparedKeywords
	if len(m) < len(kws) {
		kws = slices.Sorted(maps.Keys(m))
	}
	c.keywordsVisited += len(kws)
	for _, kw := range kws {
		val, ok := m[kw]
		if !ok || !(decided[kw] || undecided[kw]) {
			continue
		}
		if !c.keywordsA(va, f, p, m, kw, val, add) && !c.keywordsB(va, f, p, m, kw, val, add) {
			c.keywordsC(va, f, p, m, kw, val, add, &fs)
		}
	}
	return fs
}

// keywordsA is the first third of keywords' switch: the types, listed
// values and bounds of numbers and strings. It reports whether kw is one
// of its keywords.
func (c *checker) keywordsA(va view, f facts, p part, m map[string]any, kw string, val any, add func(Finding)) bool {
	switch {
	case ignored[kw]:
	case kw == "type":
		t, ok := typeOfKeyword(val)
		if !ok {
			add(finding(Unknown, "invalid_keyword", p, kw, ""))
		} else if f.types&^t != 0 && !(f.types&^t == tInt && t&tInt != 0) {
			add(finding(Incompatible, "type_narrowed", p, kw, "%s no longer accepted", (f.types &^ t).String()))
		}
	case kw == "enum" || kw == "const":
		c.listedKeyword(f, p, kw, add)
	case kw == "minimum" || kw == "exclusiveMinimum" || kw == "maximum" || kw == "exclusiveMaximum":
		c.numBoundKeyword(f, p, kw, val, add)
	case kw == "multipleOf":
		c.chargeRats(f)
		c.multipleOfKeyword(f, p, kw, val, add)
	case kw == "minLength" || kw == "maxLength":
		c.chargeValues(len(f.enum), 0)
		lengthKeyword(f, p, kw, val, add)
	default:
		return false
	}
	return true
}

// listedKeyword checks the consumer's enum or const: every value the
// producer may send must be listed. A producer that lists no values is
// only limited to them when it sends nothing but null, or integers of a
// bounded range small enough to enumerate.
func (c *checker) listedKeyword(f facts, p part, kw string, add func(Finding)) {
	allowed, ok := listedOf(p, kw, &c.reads)
	if !ok {
		add(finding(Unknown, "invalid_keyword", p, kw, ""))
		return
	}
	rule := "enum_narrowed"
	if kw == "const" {
		rule = "const_changed"
	}
	if !f.hasEnum {
		if f.types == tNull && allowed.has(canonKey(nil)) {
			return
		}
		if f.types == tInt && f.lower != nil && f.upper != nil {
			// A bounded integer range is finite: listed
			// when every integer in it is.
			switch c.integersListed(f, allowed) {
			case Incompatible:
				add(finding(Incompatible, rule, p, kw, "an integer of the producer's range is not listed"))
			case Unknown:
				add(finding(Unknown, rule, p, kw, "the producer's integer range is too large to compare with listed values"))
			}
			return
		}
		add(finding(Incompatible, rule, p, kw, "the producer is not limited to listed values"))
		return
	}
	c.chargeValues(len(f.enum), 0)
	for i := range f.enum {
		if !allowed.has(f.info[i].key) {
			add(finding(Incompatible, rule, p, kw, "value %d of the producer's list is not accepted", i))
			break
		}
	}
}

// numBoundKeyword checks a consumer's numeric bound (minimum,
// exclusiveMinimum, maximum, exclusiveMaximum) against the producer's,
// when the producer may send numbers.
func (c *checker) numBoundKeyword(f facts, p part, kw string, val any, add func(Finding)) {
	if r := keywordValue(f, tNum, p, kw, val, ratOf, add); r != nil && !c.numBound(f, kw, r) {
		add(finding(Incompatible, "bounds_tightened", p, kw, "%s %s", kw, r.RatString()))
	}
}

// multipleOfKeyword checks a consumer's multipleOf: every number the
// producer may send must be a multiple of it.
func (c *checker) multipleOfKeyword(f facts, p part, kw string, val any, add func(Finding)) {
	if r := keywordValue(f, tNum, p, kw, val, positiveRatOf, add); r != nil && !c.multipleOK(f, r) {
		add(finding(Incompatible, "multiple_of_changed", p, kw, "multipleOf %s", r.RatString()))
	}
}

// lengthKeyword checks a consumer's minLength or maxLength against the
// producer's string lengths.
func lengthKeyword(f facts, p part, kw string, val any, add func(Finding)) {
	if r := keywordValue(f, tString, p, kw, val, intOf, add); r != nil && !lenOK(f, kw, r) {
		add(finding(Incompatible, "bounds_tightened", p, kw, "%s %s", kw, r.RatString()))
	}
}

// keywordValue is the number a consumer's keyword gives (read by parse),
// when the producer may send a value of the types t the keyword
// constrains; nil, with nothing to check, when it may not, or when parse
// does not read the value (then the keyword is invalid: an
// invalid_keyword finding is added).
func keywordValue(f facts, t typeSet, p part, kw string, val any, parse func(any) (*big.Rat, bool), add func(Finding)) *big.Rat {
	if f.types&t == 0 {
		return nil
	}
	r, ok := parse(val)
	if !ok {
		add(finding(Unknown, "invalid_keyword", p, kw, ""))
		return nil
	}
	return r
}

// positiveRatOf reads a JSON number above zero (multipleOf's value).
func positiveRatOf(v any) (*big.Rat, bool) {
	r, ok := ratOf(v)
	return r, ok && r.Sign() > 0
}

// keywordsB is the second third of keywords' switch: patterns, formats,
// counts, uniqueness and required members. It reports whether kw is one
// of its keywords.
func (c *checker) keywordsB(va view, f facts, p part, m map[string]any, kw string, val any, add func(Finding)) bool {
	switch {
	case kw == "pattern":
		c.patternKeyword(f, p, kw, val, add)
	case kw == "format":
		if f.types&tString == 0 {
			return true
		}
		s, _ := val.(string)
		if f.formats[s] {
			return true
		}
		if f.hasEnum {
			add(finding(Unknown, "format_changed", p, kw, "listed values are not checked against formats"))
			return true
		}
		add(finding(Incompatible, "format_changed", p, kw, "format %q is not one the producer guarantees", s))
	case kw == "minItems" || kw == "maxItems" || kw == "minProperties" || kw == "maxProperties":
		countKeyword(f, p, kw, val, add)
	case kw == "uniqueItems":
		u, _ := val.(bool)
		if !u || f.types&tArray == 0 || f.unique {
			return true
		}
		if f.maxItems != nil && f.maxItems.Cmp(big.NewRat(1, 1)) <= 0 {
			return true
		}
		add(finding(Incompatible, "unique_items_added", p, kw, ""))
	case kw == "required":
		requiredKeyword(f, p, kw, val, add)
	default:
		return false
	}
	return true
}

// patternKeyword checks a consumer's pattern: the producer guarantees
// the same pattern, or every string it lists matches it.
func (c *checker) patternKeyword(f facts, p part, kw string, val any, add func(Finding)) {
	if f.types&tString == 0 {
		return
	}
	s, ok := val.(string)
	if !ok {
		add(finding(Unknown, "invalid_keyword", p, kw, ""))
		return
	}
	if f.patterns[s] {
		return
	}
	if !f.hasEnum {
		add(finding(Incompatible, "pattern_changed", p, kw, "the pattern is not one the producer guarantees"))
		return
	}
	re := c.compile(s)
	if re == nil {
		add(finding(Unknown, "invalid_keyword", p, kw, "the pattern does not compile (or is over a compile cap)"))
		return
	}
	okAll := true
	c.chargeValues(len(f.enum), 0)
	for _, x := range f.enum {
		xs, ok := x.(string)
		if !ok {
			continue
		}
		matched, decided := c.match(re, xs)
		if !decided {
			add(finding(Unknown, "too_complex", p, kw, "matching the listed values against the pattern exceeds the checker's bounds"))
			return
		}
		if !matched {
			okAll = false
		}
	}
	if !okAll {
		add(finding(Incompatible, "pattern_changed", p, kw, "a listed value no longer matches"))
	}
}

// countKeyword checks a consumer's item or property count against the
// producer's, when the producer may send arrays (objects).
func countKeyword(f facts, p part, kw string, val any, add func(Finding)) {
	t := tArray
	if kw == "minProperties" || kw == "maxProperties" {
		t = tObject
	}
	switch r := keywordValue(f, t, p, kw, val, intOf, add); {
	case r == nil:
	case f.hasEnum:
		add(finding(Unknown, "enum_not_checked", p, kw, "listed values are not checked against %s", kw))
	case !countOK(f, kw, r):
		add(finding(Incompatible, "bounds_tightened", p, kw, "%s %s", kw, r.RatString()))
	}
}

// requiredKeyword checks a consumer's required: every member it requires
// must be one the producer requires.
func requiredKeyword(f facts, p part, kw string, val any, add func(Finding)) {
	if f.types&tObject == 0 {
		return
	}
	req, ok := val.([]any)
	if !ok {
		add(finding(Unknown, "invalid_keyword", p, kw, ""))
		return
	}
	if f.hasEnum {
		add(finding(Unknown, "enum_not_checked", p, kw, "listed values are not checked against required"))
		return
	}
	for _, r := range req {
		if s, ok := r.(string); ok && !f.required[s] {
			add(finding(Incompatible, "required_added", p, kw, "property %q", s))
		}
	}
}

// keywordsC is the rest of keywords' switch: dependencies, applicators
// and the keywords only compared for identity.
func (c *checker) keywordsC(va view, f facts, p part, m map[string]any, kw string, val any, add func(Finding), fs *[]Finding) {
	switch {
	case kw == "dependentRequired":
		deps, ok := val.(map[string]any)
		if !ok {
			add(finding(Unknown, "invalid_keyword", p, kw, ""))
			return
		}
		if f.types&tObject == 0 || c.sameKeyword(va, kw, val) {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(deps)) {
			list, ok := deps[k].([]any)
			if !ok {
				add(finding(Unknown, "invalid_keyword", p, kw, "property %q", k))
				continue
			}
			for _, d := range list {
				s, ok := d.(string)
				if !ok {
					add(finding(Unknown, "invalid_keyword", p, kw, "property %q", k))
					continue
				}
				if v := c.dependencyLost(va, f, k, s); v != "" {
					add(finding(v, "dependency_added", p, kw, "property %q now needs %q", k, s))
				}
			}
		}
	case kw == "not" && !c.sameKeyword(va, kw, val):
		for _, x := range c.notKeyword(va, p) {
			add(x)
		}
	case kw == "if":
		if c.sameGroup(va, m, "if", "then", "else") {
			return
		}
		for _, x := range c.ifThenElse(va, p) {
			add(x)
		}
	case kw == "contains":
		if !c.sameGroup(va, m, "contains", "minContains", "maxContains") {
			add(finding(Unknown, "undecided_keyword", p, kw, "contains is only compared for identity, with minContains and maxContains"))
		}
	case kw == "dependentSchemas" && !c.sameKeyword(va, kw, val):
		for _, x := range c.dependentSchemas(va, f, p) {
			add(x)
		}
	case kw == "anyOf" || kw == "oneOf":
		*fs = append(*fs, c.union(va, f, p, kw)...)
	case kw == "unevaluatedItems":
		// What it refuses depends on the items its schema's other
		// keywords evaluate: only the whole group is the same.
		if noneOf(m, "$ref", "$dynamicRef", "$recursiveRef") && c.sameGroup(va, m, itemEvaluating...) {
			return
		}
		add(finding(Unknown, "undecided_keyword", p, kw, "unevaluatedItems is only compared for identity, with every keyword of its schema that evaluates items"))
	case undecided[kw]:
		if c.sameKeyword(va, kw, val) {
			return
		}
		add(finding(Unknown, "undecided_keyword", p, kw, "%s is only compared for identity", kw))
	default:
		// Keywords the validator does not compile are annotations in
		// draft 2020-12 (decided lists those it compiles).
	}
}

func (v view) parts0() node {
	if len(v.parts) > 0 {
		return v.parts[0].n
	}
	return node{}
}

func (n node) docKey() string {
	if n.doc == nil {
		return ""
	}
	return n.doc.key
}

func hasAnyKeyword(v view, kws ...string) bool {
	for _, p := range v.parts {
		m := p.n.v.(map[string]any)
		for _, k := range kws {
			if _, ok := m[k]; ok {
				return true
			}
		}
	}
	return false
}

// sameKeyword reports whether a producer part carries the same keyword
// value, with no reference inside that could resolve differently.
func (c *checker) sameKeyword(va view, kw string, val any) bool {
	if refKeywords[kw] || !c.holdsNoRef(val) {
		// A reference's value is never the same by its text: what it
		// names depends on its base and, for "$dynamicRef" and
		// "$recursiveRef", on the dynamic scope.
		return false
	}
	// One walk over every producer part and the values compared, a
	// value each part looked up, charged once (chargeWalk): charged
	// walk by walk, each under valuesPerStep values was free, and an
	// acceptor of many parts asking a producer of many parts cost parts
	// × parts uncharged (COMPAT-16). Past the bound, not the same.
	left, start := c.walkLeft()
	same := false
	for _, p := range va.parts {
		if left--; left < 0 {
			break
		}
		if x, ok := p.n.v.(map[string]any)[kw]; ok && equalWithin(x, val, &left) && left >= 0 {
			same = true
			break
		}
	}
	c.leafWalked += start - left
	return c.chargeWalk(start, left) && same
}

// listsMeet reports whether a value is listed by both fx and fy, by
// their canonical forms.
func (c *checker) listsMeet(fx, fy facts) bool {
	c.chargeValues(len(fx.enum)+len(fy.enum), 0)
	set := make(map[string]struct{}, len(fy.info))
	for _, i := range fy.info {
		set[i.key] = struct{}{}
	}
	for _, i := range fx.info {
		if _, ok := set[i.key]; ok {
			return true
		}
	}
	return false
}

// pattern is a regular expression of a schema, compiled, with the bound
// on its program's instructions: one match costs up to that many steps
// per byte of the string.
type pattern struct {
	re    *regexp.Regexp
	insts int
}

// compile returns the pattern s compiled by
// offlineschema.CompilePatternWithin (the offline compiler's caps on one
// pattern, MaxPatternInsts and MaxPatternRanges), once per check; nil
// when it does not compile, is over a cap, or compiling it would take the
// check over MaxValueWork (undecided). Reading the text is charged first,
// then what the compile builds (compileWork), before it is built: a
// 13-byte "^\pL{990}$" builds 650,000 ranges (90 ms).
func (c *checker) compile(s string) *pattern {
	if c.regexp == nil {
		c.regexp = map[string]*pattern{}
	}
	if p, ok := c.regexp[s]; ok {
		return p
	}
	var p *pattern
	// Reading the text costs up to a few µs a byte of the pattern.
	c.chargeValues(0, len(s)/parseBytesPerWork)
	if c.work > MaxValueWork || c.spent() {
		return nil
	}
	charged := false
	re, cost, err := offlineschema.CompilePatternWithin(s, func(cost offlineschema.PatternCost) bool {
		charged = true
		c.chargeValues(0, compileWork(cost))
		return c.work <= MaxValueWork && !c.spent()
	})
	if !charged {
		// Refused by a cap or not parsed: measuring it cost up to there.
		c.chargeValues(0, compileWork(cost))
	}
	if err == nil {
		p = &pattern{re: re, insts: cost.Insts}
	}
	if c.work > MaxValueWork || c.spent() {
		return nil // undecided: not remembered as not compiling
	}
	c.regexp[s] = p
	return p
}

// parseBytesPerWork is how many bytes of a pattern reading and parsing
// its text counts as one unit of value work.
const parseBytesPerWork = 4

// compileWork is what building a pattern's programs counts for in value
// work: an instruction about half a unit (0.5 µs), a character-class
// range (its parse or the one-pass copy) an eighth. Measuring a pattern
// the caps refuse costs at most the caps.
func compileWork(cost offlineschema.PatternCost) int {
	return min(cost.Insts, offlineschema.MaxPatternInsts)/2 + min(cost.Ranges, offlineschema.MaxPatternRanges+1)/8
}

// matchPerWork is how many instructions × bytes of regular expression
// matching count as one unit of value work (MaxValueWork): Go's regexp
// runs its NFA at a few nanoseconds per instruction and byte, about what
// a pass over 64 listed values costs per 256.
const matchPerWork = 256

// match reports whether p matches s, after charging the match to the
// check's value work as program size × string length (Go's regexp has
// no DFA: that is its worst case). decided is false, and nothing runs,
// when the charge takes the check over MaxValueWork or the matrix's
// budget: the caller reads that as undecided (Unknown).
func (c *checker) match(p *pattern, s string) (matched, decided bool) {
	before := c.matchWork / matchPerWork
	c.matchWork += p.insts * max(len(s), 1)
	c.chargeValues(0, c.matchWork/matchPerWork-before)
	if c.work > MaxValueWork || c.spent() {
		return false, false
	}
	return p.re.MatchString(s), true
}

// numBound: every number the producer admits satisfies kw r.
func (c *checker) numBound(f facts, kw string, r *big.Rat) bool {
	if f.hasEnum {
		c.chargeRats(f)
		for _, x := range f.enum {
			v, ok := c.listedRat(x)
			if !ok {
				continue
			}
			cmp := v.Cmp(r)
			if (kw == "minimum" && cmp < 0) || (kw == "exclusiveMinimum" && cmp <= 0) ||
				(kw == "maximum" && cmp > 0) || (kw == "exclusiveMaximum" && cmp >= 0) {
				return false
			}
		}
		return true
	}
	switch kw {
	case "minimum", "exclusiveMinimum":
		if f.lower == nil {
			return false
		}
		cmp := f.lower.r.Cmp(r)
		return cmp > 0 || (cmp == 0 && (kw == "minimum" || f.lower.excl))
	default:
		if f.upper == nil {
			return false
		}
		cmp := f.upper.r.Cmp(r)
		return cmp < 0 || (cmp == 0 && (kw == "maximum" || f.upper.excl))
	}
}

func isIntRat(r *big.Rat) bool { return r.IsInt() }

// multipleOK: every number the producer admits is a multiple of m.
func (c *checker) multipleOK(f facts, m *big.Rat) bool {
	if f.hasEnum {
		for _, x := range f.enum {
			v, ok := c.listedRat(x)
			if ok && !isIntRat(new(big.Rat).Quo(v, m)) {
				return false
			}
		}
		return true
	}
	for _, a := range f.mults {
		if isIntRat(new(big.Rat).Quo(a, m)) {
			return true
		}
	}
	// An integer-only producer is a multiple of 1/k.
	if f.types&tNum == tInt && isIntRat(new(big.Rat).Inv(m)) {
		return true
	}
	return false
}

func lenOK(f facts, kw string, r *big.Rat) bool {
	if f.hasEnum {
		for _, x := range f.enum {
			s, ok := x.(string)
			if !ok {
				continue
			}
			n := big.NewRat(int64(utf8.RuneCountInString(s)), 1)
			if (kw == "minLength" && n.Cmp(r) < 0) || (kw == "maxLength" && n.Cmp(r) > 0) {
				return false
			}
		}
		return true
	}
	if kw == "minLength" {
		return r.Sign() == 0 || (f.minLen != nil && f.minLen.Cmp(r) >= 0)
	}
	return f.maxLen != nil && f.maxLen.Cmp(r) <= 0
}

func countOK(f facts, kw string, r *big.Rat) bool {
	switch kw {
	case "minItems":
		return r.Sign() == 0 || (f.minItems != nil && f.minItems.Cmp(r) >= 0)
	case "maxItems":
		return f.maxItems != nil && f.maxItems.Cmp(r) <= 0
	case "minProperties":
		if r.Sign() == 0 {
			return true
		}
		return (f.minProps != nil && f.minProps.Cmp(r) >= 0) || big.NewRat(int64(len(f.required)), 1).Cmp(r) >= 0
	default:
		return f.maxProps != nil && f.maxProps.Cmp(r) <= 0
	}
}

// union checks a producer against one anyOf/oneOf of the acceptor.
func (c *checker) union(va view, f facts, p part, kw string) []Finding {
	list, ok := p.n.v.(map[string]any)[kw].([]any)
	if !ok || len(list) == 0 {
		return []Finding{finding(Unknown, "invalid_keyword", p, kw, "")}
	}
	if c.sameKeyword(va, kw, list) {
		return nil
	}
	branches := make([]part, 0, len(list))
	for i := range list {
		if ch, ok := p.n.child(kw, strconv.Itoa(i)); ok {
			branches = append(branches, part{n: ch, path: p.path + "/" + kw + "/" + strconv.Itoa(i), scope: 0})
		}
	}
	var union typeSet
	for _, br := range branches {
		bv := c.flatten(c.b, []part{br})
		if !bv.never && len(bv.bad) == 0 {
			union |= c.factsOfB(bv)
		} else if len(bv.bad) > 0 {
			union = tAll
		}
	}
	if kw == "oneOf" {
		// The producer must match exactly one branch.
		fs, done := c.oneOf(va, f, p, branches)
		if done && (len(fs) == 0 || fs[0].Verdict == Incompatible) {
			return fs
		}
		if lost := c.soleBranchLoss(va, f, branches); lost != nil {
			return lost
		}
		if done {
			return fs
		}
	} else {
		for _, br := range branches {
			if len(c.subset(va.parts, []part{br})) == 0 {
				return nil
			}
		}
		// Split the producer by listed value or by type: each part must
		// be covered by one branch ("type" lists written as anyOf).
		if rs, ok := c.restrictions(va, f); ok && len(rs) > 1 {
			covered := true
			for _, r := range rs {
				one := false
				for _, br := range branches {
					if len(c.subset(r, []part{br})) == 0 {
						one = true
						break
					}
				}
				if !one {
					covered = false
					break
				}
			}
			if covered {
				return nil
			}
		}
		if lost := c.soleBranchLoss(va, f, branches); lost != nil {
			return lost
		}
	}
	if lost := f.types &^ union; lost != 0 && !(lost == tInt && union&tInt != 0) {
		return []Finding{finding(Incompatible, "type_narrowed", p, kw, "%s no longer accepted", lost.String())}
	}
	return []Finding{finding(Unknown, kw+"_not_covered", p, kw, "no single branch is proven to cover the producer")}
}

// factsOfB is the type set a flattened acceptor conjunction admits.
func (c *checker) factsOfB(v view) typeSet {
	t := tAll
	for _, p := range v.parts {
		m := p.n.v.(map[string]any)
		if x, ok := m["type"]; ok {
			if ts, ok := typeOfKeyword(x); ok {
				t &= ts
			}
		}
		for _, kw := range []string{"enum", "const"} {
			if l, ok := listedOf(p, kw, &c.reads); ok {
				t &= l.types
			}
		}
	}
	return t
}

// disjoint reports whether no instance is valid under both conjunctions:
// their types do not meet, their listed values do not meet, or both
// require a property whose listed values do not meet (a discriminator).
func (c *checker) disjoint(sx *side, x []part, sy *side, y []part) bool {
	vx, vy := c.flatten(sx, x), c.flatten(sy, y)
	if vx.never || vy.never {
		return true
	}
	tx, ty := c.factsOfB(vx), c.factsOfB(vy)
	if tx&ty == 0 {
		return true
	}
	fx, fy := c.factsOf(vx), c.factsOf(vy)
	if fx.hasEnum && fy.hasEnum && !c.listsMeet(fx, fy) {
		// Both list their values: disjoint when no value is on both lists.
		return true
	}
	for name := range fx.required {
		if !fy.required[name] {
			continue
		}
		ex := c.flatten(sx, c.propertyParts(sx, vx, name, false))
		ey := c.flatten(sy, c.propertyParts(sy, vy, name, false))
		gx, gy := c.factsOf(ex), c.factsOf(ey)
		if gx.hasEnum && gy.hasEnum && !c.listsMeet(gx, gy) {
			return true
		}
	}
	return false
}

// typePart is a synthetic producer conjunct {"type": name}, used to split
// a producer by type.
func typePart(name string) part {
	d := &document{key: "\x00type:" + name, base: "ampbundle:///", root: map[string]any{"type": name}}
	return part{n: mkNode(d, "", d.base, d.root), path: "", scope: -2}
}

// unionKey names a union of a document: the artifact and pointer of the
// schema object holding it, and its keyword (anyOf, oneOf).
type unionKey struct{ key, ptr, kw string }

// branchAt is a part of a conjunction that is a branch of a union: the
// branch's index and the part's node.
type branchAt struct {
	i  int
	id nodeID
}

// unionBranches indexes the parts of a conjunction that are branches of
// a union, by the union (their pointers name it): what expanded looks
// up, a pass over the parts, which flatten charged.
func unionBranches(ps []part) map[unionKey][]branchAt {
	out := map[unionKey][]branchAt{}
	for _, p := range ps {
		j := strings.LastIndexByte(p.n.ptr, '/')
		if j < 0 {
			continue
		}
		i, err := strconv.Atoi(p.n.ptr[j+1:])
		k := strings.LastIndexByte(p.n.ptr[:j], '/')
		if err != nil || i < 0 || k < 0 {
			continue
		}
		if kw := p.n.ptr[k+1 : j]; kw == "anyOf" || kw == "oneOf" {
			u := unionKey{key: p.n.doc.key, ptr: p.n.ptr[:k], kw: kw}
			out[u] = append(out[u], branchAt{i: i, id: p.n.id()})
		}
	}
	return out
}

// expanded reports whether a branch of the union kw of p (n branches) is
// already part of the conjunction whose union branches are have
// (unionBranches): the union was split before. It looks at those parts,
// not at every branch: asking each of n branches, at each of the n
// comparisons of a split, made n²/2 subschemas a split and none charged
// (docs/SPEC-DECISIONS.md COMPAT-19).
func expanded(have map[unionKey][]branchAt, p part, kw string, n int) bool {
	for _, b := range have[unionKey{key: p.n.doc.key, ptr: p.n.ptr, kw: kw}] {
		if b.i >= n {
			continue
		}
		if ch, ok := p.n.child(kw, strconv.Itoa(b.i)); ok && ch.id() == b.id {
			return true
		}
	}
	return false
}

func setAdd(m map[string]bool, k string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[k] = true
	return m
}

// sameLeaf reports whether two schema values are equal JSON holding no
// reference (and no $id): they then accept exactly the same instances.
// Its walks are charged to the check's work (equalValues, holdsNoRef).
func (c *checker) sameLeaf(a, b any) bool {
	return c.equalValues(a, b) && c.holdsNoRef(a)
}

// equalValues is equal within what is left of the check's value work
// (MaxValueWork) and the matrix's budget, charged a unit per
// valuesPerStep values visited, as a pass over listed values is: a
// schema listing a million values, compared again at every reference
// to it, costs its size each time. False (not proven equal) when the
// walk would pass the bound; the check then compares the long way, and
// is too_complex there.
func (c *checker) equalValues(a, b any) bool {
	left, start := c.walkLeft()
	same := equalWithin(a, b, &left)
	c.leafWalked += start - left
	return c.chargeWalk(start, left) && same
}

// holdsNoRef reports whether v holds no reference keyword (refKeywords)
// anywhere, within and charged to the check's value work as
// equalValues is; false when the walk would pass the bound.
func (c *checker) holdsNoRef(v any) bool {
	left, start := c.walkLeft()
	found := containsRefWithin(v, &left)
	c.leafWalked += start - left
	return c.chargeWalk(start, left) && !found
}

// chargeWalk charges a walk that began with start values to visit and
// ended with left, and reports whether it ended within them; one cut
// short takes the check past its value work (or the matrix past its
// budget), so that what follows is too_complex.
func (c *checker) chargeWalk(start, left int) bool {
	if left < 0 {
		c.chargeValues(start, 1)
		return false
	}
	c.chargeValues(start-left, 0)
	return true
}

// walkLeft is how many values a walk may visit before its charge
// (chargeValues: valuesPerStep a unit) takes the check past its value
// work or the matrix past its budget, as the walk's budget and its
// start.
func (c *checker) walkLeft() (left, start int) {
	units := MaxValueWork - c.work
	if c.budget != nil {
		units = min(units, *c.budget)
	}
	if units < 0 {
		return 0, 0
	}
	n := units*valuesPerStep + valuesPerStep - 1
	return n, n
}
