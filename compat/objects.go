package compat

import (
	"maps"
	"slices"
	"strconv"
)

// conditional applicators make the set of evaluated properties depend on
// the instance; unevaluatedProperties next to them is not decided.
var conditional = []string{"anyOf", "oneOf", "if", "dependentSchemas", "$dynamicRef", "$recursiveRef"}

// propertyParts is the conjunction of the schemas that apply to property
// name (or, with other set, to a property no part lists) in a flattened
// conjunction v of side s. ignorePatterns treats every name as matching
// no patternProperties (used when both sides carry the same patterns).
// unc lists what could not be decided (only meaningful for the acceptor:
// for the producer, leaving a schema out is sound).
func (c *checker) propertyParts(s *side, v view, name string, other bool) []part {
	ps, _ := c.propertyPartsUnc(s, v, name, other, false)
	return ps
}

// propertyPartsUnc is propertyParts with what could not be decided: for
// each part, the subschemas its properties, patternProperties and
// additionalProperties give the property (memberParts), then its
// unevaluatedProperties where its own schema does not evaluate the name
// (evaluatedIn).
//
// Every part is looked up for the name: a lookup each, charged before the
// walk (chargeLookups), so a conjunction of many parts asked for many
// names costs names × parts (COMPAT-16); past the check's work, nothing
// is walked and the answer is too_complex.
func (c *checker) propertyPartsUnc(s *side, v view, name string, other, ignorePatterns bool) (out []part, unc []Finding) {
	if c.chargeLookups(len(v.parts)); c.overWork() {
		return nil, c.overFindings(v)
	}
	for _, p := range v.parts {
		m := p.n.v.(map[string]any)
		out, unc = c.memberParts(p, m, name, other, ignorePatterns, out, unc)
		if _, ok := m["unevaluatedProperties"]; ok {
			si := c.evaluatedIn(s, p, name, other, ignorePatterns)
			switch {
			case si.uncertain:
				unc = append(unc, finding(Unknown, "undecided_keyword", p, "unevaluatedProperties", "evaluated properties depend on the instance"))
			case !si.evaluated:
				if ch, ok := p.n.child("unevaluatedProperties"); ok {
					out = append(out, part{n: ch, path: p.path + "/unevaluatedProperties", scope: p.scope})
				}
			}
		}
	}
	return out, unc
}

// evalScope says whether the property is evaluated where an
// unevaluatedProperties sees it, and whether that is certain: what
// decides whether the keyword applies.
type evalScope struct {
	evaluated, uncertain bool
}

// ownSchema is the conjunction that part p (of side s) heads: p itself
// and what its "$ref" and "allOf" reach, flattened once per check (the
// walk is charged as flatten's). An unevaluatedProperties sees the
// evaluations of this schema only: not those of the parts next to it in
// a larger conjunction (a parent's or a sibling's "properties").
func (c *checker) ownSchema(s *side, p part) view {
	key := ownKey{s: s, id: p.n.id()}
	if v, ok := c.own[key]; ok {
		return v
	}
	v := c.flatten(s, []part{p})
	if c.own == nil {
		c.own = map[ownKey]view{}
	}
	c.own[key] = v
	return v
}

// ownKey names a part's own schema in checker.own.
type ownKey struct {
	s  *side
	id nodeID
}

// evaluatedIn computes whether the property (name, or an unlisted one
// with other) is evaluated by the schema of part p, which carries
// unevaluatedProperties (ownSchema): by its properties,
// patternProperties or additionalProperties, or by an
// unevaluatedProperties below it. A conditional applicator, a pattern
// that cannot be decided, or a schema past the bounds makes it uncertain.
func (c *checker) evaluatedIn(s *side, p part, name string, other, ignorePatterns bool) evalScope {
	var si evalScope
	own := c.ownSchema(s, p)
	// Each pass over the own schema is charged ownPartLookups a part:
	// one asked for every property name would otherwise walk every part
	// uncharged (review 60), counted over the check (chargeLookups,
	// COMPAT-16); an uncertain pass, which makes a finding, is charged
	// uncertainPartLookups a part more below (COMPAT-17 amended: a flat
	// 32 made an honest closed record of 70 mixins unknown, a flat 1 let
	// a certain pass cost 4-9 times its charge). Past the check's work,
	// uncertain.
	if c.chargeLookups(len(own.parts) * ownPartLookups); len(own.bad) > 0 || c.overWork() {
		si.uncertain = true
		return si
	}
	c.ownWalked += len(own.parts)
	for i, q := range own.parts {
		m := q.n.v.(map[string]any)
		for _, kw := range conditional {
			if _, ok := m[kw]; ok {
				si.uncertain = true
			}
		}
		if _, ok := m["additionalProperties"]; ok {
			si.evaluated = true
		}
		if _, ok := m["unevaluatedProperties"]; ok && i > 0 {
			// Below p, it evaluates whatever reaches it.
			si.evaluated = true
		}
		if props, ok := m["properties"].(map[string]any); ok && !other {
			if _, ok := props[name]; ok {
				si.evaluated = true
			}
		}
		if pp, ok := m["patternProperties"].(map[string]any); ok && len(pp) > 0 && !ignorePatterns {
			c.patternsEvaluate(&si, pp, name, other)
		}
	}
	if si.uncertain {
		c.chargeLookups(len(own.parts) * uncertainPartLookups)
	}
	return si
}

// ownPartLookups is what evaluatedIn charges for each part of an own
// schema a pass walks, in lookups (chargeLookups): its fourteen keyword
// lookups and the own schema's key, about what 8 lookups of a property
// name cost (a certain pass of a closed record measured 6,400 to 16,000
// ns a unit charged at 1 a part, against 1,800 for a flatten).
// uncertainPartLookups is what it charges a part more when the pass ends
// uncertain: the finding such an answer makes and the comparisons an
// uncertain part splits into, 32 lookups a part in all
// (BenchmarkPropertyLookupCost).
const (
	ownPartLookups       = 8
	uncertainPartLookups = 24
)

// patternLookups is what evaluatedIn charges for each pattern it matches
// a name against, in lookups: a match of a short pattern on a short name
// (about 130 ns) is 4 to 5 lookups; match charges the longer ones by
// their instructions × bytes.
const patternLookups = 4

// patternsEvaluate marks si evaluated when a pattern of pp matches name,
// uncertain when one does not compile or the name is unlisted (other).
func (c *checker) patternsEvaluate(si *evalScope, pp map[string]any, name string, other bool) {
	if other {
		si.uncertain = true
		return
	}
	// A lookup's worth a pattern, before any is matched: a closed schema
	// of 4,990 names and 4,990 patterns took 6.4 s a check charging a
	// fifth of the work bound (COMPAT-17 amended).
	if c.chargeLookups(len(pp) * patternLookups); c.overWork() {
		si.uncertain = true
		return
	}
	for pat := range pp {
		re := c.compile(pat)
		if re == nil {
			si.uncertain = true
		} else if matched, decided := c.match(re, name); !decided {
			si.uncertain = true
		} else if matched {
			si.evaluated = true
		}
	}
}

// memberParts appends to out the subschemas part p (its object m) gives
// the property: its properties entry for name; else those of the
// patternProperties it matches, or additionalProperties when it matches
// none. An unlisted name (other) against patterns is undecided (unc).
func (c *checker) memberParts(p part, m map[string]any, name string, other, ignorePatterns bool, out []part, unc []Finding) ([]part, []Finding) {
	props, _ := m["properties"].(map[string]any)
	if _, ok := props[name]; ok && !other {
		if ch, ok := p.n.child("properties", name); ok {
			out = append(out, part{n: ch, path: p.path + "/properties/" + escape(name), scope: p.scope})
		}
		return out, unc
	}
	matched := false
	patterned := false
	if pp, ok := m["patternProperties"].(map[string]any); ok && len(pp) > 0 && !ignorePatterns {
		patterned = true
		if !other {
			// A lookup a pattern, a name matched against them.
			c.chargeLookups(len(pp))
			out, unc, matched = c.patternParts(p, pp, name, out, unc)
		}
	}
	if other && patterned {
		// An unlisted name may match a pattern: only the same
		// patterns on both sides are decided (ignorePatterns).
		unc = append(unc, finding(Unknown, "undecided_keyword", p, "patternProperties", "patterns are only compared for identity"))
	} else if _, ok := m["additionalProperties"]; ok && !matched {
		if ch, ok := p.n.child("additionalProperties"); ok {
			out = append(out, part{n: ch, path: p.path + "/additionalProperties", scope: p.scope})
		}
	}
	return out, unc
}

// patternParts appends the subschemas of the patterns of pp (part p's
// patternProperties) that match name, in pattern order; matched says
// whether any did. A pattern that does not compile is undecided.
func (c *checker) patternParts(p part, pp map[string]any, name string, out []part, unc []Finding) ([]part, []Finding, bool) {
	matched := false
	for _, pat := range slices.Sorted(maps.Keys(pp)) {
		re := c.compile(pat)
		if re == nil {
			unc = append(unc, finding(Unknown, "invalid_keyword", p, "patternProperties", "a pattern does not compile (or is over a compile cap)"))
			continue
		}
		hit, decided := c.match(re, name)
		if !decided {
			unc = append(unc, finding(Unknown, "too_complex", p, "patternProperties", "matching member names against the patterns exceeds the checker's bounds"))
			continue
		}
		if hit {
			matched = true
			if ch, ok := p.n.child("patternProperties", pat); ok {
				out = append(out, part{n: ch, path: p.path + "/patternProperties/" + escape(pat), scope: p.scope})
			}
		}
	}
	return out, unc, matched
}

// allFalse reports whether every part is the schema false.
func allFalse(ps []part) bool {
	if len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		if b, ok := p.n.v.(bool); !ok || b {
			return false
		}
	}
	return true
}

// samePatterns reports whether unlisted names may be checked as if no
// pattern matched them (ignorePatterns): every part of both sides that
// carries patternProperties carries one and the same value V, with no
// reference in it, both sides carry it, and on the acceptor every part
// with additionalProperties or unevaluatedProperties carries V. A name V
// matches then gets V's schemas from the producer and nothing else from
// the acceptor (its own schema evaluates the name); a
// name it does not match meets no pattern on either side. Patterns on
// one side only, or different on the two, leave unlisted names Unknown.
func (c *checker) samePatterns(va, vb view) bool {
	var v any
	seen := [2]bool{}
	for i, w := range []view{va, vb} {
		for _, p := range w.parts {
			pp, ok := p.n.v.(map[string]any)["patternProperties"]
			if !ok {
				continue
			}
			if v == nil {
				if !c.holdsNoRef(pp) {
					return false
				}
				v = pp
			} else if !c.equalValues(v, pp) {
				return false
			}
			seen[i] = true
		}
	}
	if !seen[0] || !seen[1] {
		return false
	}
	for _, p := range vb.parts {
		m := p.n.v.(map[string]any)
		if noneOf(m, "patternProperties") && !noneOf(m, "additionalProperties", "unevaluatedProperties") {
			return false
		}
	}
	return true
}

func (c *checker) objects(va, vb view, f facts) []Finding {
	if !hasAnyKeyword(vb, "properties", "additionalProperties", "patternProperties", "unevaluatedProperties") {
		return nil
	}
	var fs []Finding
	names := map[string]bool{}
	for _, v := range []view{va, vb} {
		for _, p := range v.parts {
			if props, ok := p.n.v.(map[string]any)["properties"].(map[string]any); ok {
				c.chargeLookups(len(props))
				for k := range props {
					names[k] = true
				}
			}
		}
	}
	sorted := slices.Sorted(maps.Keys(names))
	// Each name is looked up in every part of both sides (propertyPartsUnc
	// charges it); once the check's work is past its bound, the names left
	// are not walked. What cannot be decided of a part is the same
	// finding for every name that meets it: kept once (seen), not once a
	// name (COMPAT-16).
	seen := map[Finding]bool{}
	check := func(name string, other, ignore bool) {
		bp, unc := c.propertyPartsUnc(c.b, vb, name, other, ignore)
		for _, x := range unc {
			if !seen[x] {
				seen[x] = true
				fs = append(fs, x)
			}
		}
		if len(bp) == 0 {
			return
		}
		ap, aunc := c.propertyPartsUnc(c.a, va, name, other, ignore)
		sub := c.subset(ap, bp)
		if len(sub) == 0 {
			return
		}
		if len(aunc) > 0 {
			// The producer has constraints here the checker left out:
			// a loss is possible, not proven.
			sub = uncertain(sub)
			f.opaque = true
		}
		if allFalse(bp) {
			v := Incompatible
			if f.opaque {
				v = Unknown
			}
			if other {
				fs = append(fs, Finding{Verdict: v, Rule: "additional_properties_closed", Pointer: bp[0].path, Artifact: bp[0].n.doc.key, At: bp[0].n.ptr,
					Detail: "properties the producer leaves open are refused"})
			} else {
				fs = append(fs, Finding{Verdict: v, Rule: "property_removed", Pointer: bp[0].path, Artifact: bp[0].n.doc.key, At: bp[0].n.ptr,
					Detail: "property " + strconv.Quote(name)})
			}
			return
		}
		fs = append(fs, sub...)
	}
	for _, name := range sorted {
		if c.overWork() {
			return append(fs, c.overFindings(vb)...)
		}
		check(name, false, false)
	}
	check("", true, c.samePatterns(va, vb))
	return fs
}

// overFindings is the too_complex finding of a check past its work, at
// the first part of v (at no part when v has none).
func (c *checker) overFindings(v view) []Finding {
	if len(v.parts) == 0 {
		return []Finding{{Verdict: Unknown, Rule: "too_complex"}}
	}
	return []Finding{c.tooComplex(v.parts[0])}
}

// itemParts is the conjunction of the schemas that apply to array index
// i (or, with tail set, to every index past all prefixItems). Every part
// is looked up for the index, charged before the walk as
// propertyPartsUnc's lookups are (COMPAT-16).
func (c *checker) itemParts(v view, i int, tail bool) (out []part, unc []Finding) {
	if c.chargeLookups(len(v.parts)); c.overWork() {
		return nil, c.overFindings(v)
	}
	for _, p := range v.parts {
		m := p.n.v.(map[string]any)
		prefix, _ := m["prefixItems"].([]any)
		if !tail && i < len(prefix) {
			if ch, ok := p.n.child("prefixItems", strconv.Itoa(i)); ok {
				out = append(out, part{n: ch, path: p.path + "/prefixItems/" + strconv.Itoa(i), scope: p.scope})
			}
			continue
		}
		if it, ok := m["items"]; ok {
			if _, isArr := it.([]any); isArr {
				unc = append(unc, finding(Unknown, "undecided_keyword", p, "items", "array-form items (draft 2019-09 and older) is not compared"))
				continue
			}
			if ch, ok := p.n.child("items"); ok {
				out = append(out, part{n: ch, path: p.path + "/items", scope: p.scope})
			}
		}
	}
	return out, unc
}

func (c *checker) arrays(va, vb view, f facts) []Finding {
	if !hasAnyKeyword(vb, "items", "prefixItems") {
		return nil
	}
	var fs []Finding
	n := 0
	for _, v := range []view{va, vb} {
		for _, p := range v.parts {
			if prefix, ok := p.n.v.(map[string]any)["prefixItems"].([]any); ok {
				n = max(n, len(prefix))
			}
		}
	}
	limit := func(i int) bool { // index i cannot exist in a producer array
		return f.maxItems != nil && f.maxItems.IsInt() && f.maxItems.Num().IsInt64() && f.maxItems.Num().Int64() <= int64(i)
	}
	for i := 0; i < n; i++ {
		if limit(i) {
			return fs
		}
		if c.overWork() {
			return append(fs, c.overFindings(vb)...)
		}
		bp, unc := c.itemParts(vb, i, false)
		fs = append(fs, unc...)
		if len(bp) == 0 {
			continue
		}
		ap, aunc := c.itemParts(va, i, false)
		sub := c.subset(ap, bp)
		if len(aunc) > 0 {
			sub = uncertain(sub)
		}
		fs = append(fs, sub...)
	}
	if limit(n) {
		return fs
	}
	bp, unc := c.itemParts(vb, n, true)
	fs = append(fs, unc...)
	if len(bp) > 0 {
		ap, aunc := c.itemParts(va, n, true)
		sub := c.subset(ap, bp)
		if len(aunc) > 0 {
			sub = uncertain(sub)
		}
		fs = append(fs, sub...)
	}
	return fs
}

// uncertain turns incompatible findings into unknown ones.
func uncertain(fs []Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		if f.Verdict == Incompatible {
			f.Verdict = Unknown
		}
		out[i] = f
	}
	return out
}
