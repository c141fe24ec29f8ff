package compat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// manyPartsSchema is one schema document whose "$defs/b" is an allOf of
// n parts, part(i) each, with extra members next to the allOf, and
// whose property "r" is a "$ref" to it: comparing the document with
// itself flattens the n parts on both sides, and "r" (a reference) is
// not proven by sameLeaf, so the conjunctions are compared.
func manyPartsSchema(n int, part func(i int) string, extra string) memLoader {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = part(i)
	}
	doc := `{"type":"object","properties":{"r":{"$ref":"#/$defs/b"}},"$defs":{"b":{` + extra + `"allOf":[` + strings.Join(ps, ",") + `]}}}`
	return memLoader{files: map[string][]byte{"s.json": []byte(doc)}}
}

// checkItself runs the check of s.json against itself, once the
// offline compiler has taken it and the two sides are parsed, and
// returns the checker (what it charged) and the report.
func checkItself(t *testing.T, l memLoader) (*checker, Report) {
	t.Helper()
	if _, err := offlineschema.Compile(l, "s.json", offlineschema.Options{}); err != nil {
		t.Fatalf("the offline compiler refuses the schema (%d bytes): %v", len(l.files["s.json"]), err)
	}
	a, b := parsedTwice(t, l)
	c := &checker{a: a.s, b: b.s, memo: map[string]int{}, assumed: maxInt}
	return c, c.run("s.json", "s.json")
}

// parsedTwice is two Sources of l with s.json parsed.
func parsedTwice(t testing.TB, l memLoader) (*Source, *Source) {
	t.Helper()
	a, b := NewSource(l), NewSource(l)
	for _, src := range []*Source{a, b} {
		if _, e := src.s.load("s.json"); e != "" {
			t.Fatal(e)
		}
	}
	return a, b
}

// oneProperty, noItemSchema, negated and contained are parts of
// manyPartsSchema: each lists one property of its own, gives no item
// schema, negates a value of its own, or requires an item of its own.
func oneProperty(i int) string  { return fmt.Sprintf(`{"properties":{"p%05d":{}}}`, i) }
func noItemSchema(i int) string { return fmt.Sprintf(`{"minItems":%d}`, i%2) }
func negated(i int) string      { return fmt.Sprintf(`{"not":{"const":%d}}`, i) }
func contained(i int) string    { return fmt.Sprintf(`{"contains":{"const":%d}}`, i) }

// prefixItems is n empty item schemas, as an extra member of
// manyPartsSchema.
func prefixItems(n int) string {
	return `"prefixItems":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `],`
}

// TestPartsLookedUpForEveryNameIndexOrKeywordAreCharged: one comparison
// of two conjunctions looks every property name up in every part of
// both sides (objects, propertyPartsUnc), every prefixItems index in
// every part (arrays, itemParts), and for every acceptor part asking
// for the same "not" or "contains", every producer part (sameKeyword,
// sameGroup); only the parts were charged (flatten: a unit each), and a
// walk under valuesPerStep values was free. An allOf of 4,000
// single-property parts cost 32 million lookups a comparison (2 to 4 s)
// for 8,000 units of work; 30 references to it a minute before the work
// bound stopped the check.
// Each lookup is now charged (chargeLookups, valuesPerStep a unit, or one
// walk over the producer's parts), so the work a check is charged grows
// as names × parts, indices × parts, parts × parts: at least the
// lookups over valuesPerStep here (before: 2,053 to 2,099 units for
// 1,000 parts, where at least 31,250, 31,250, 7,812 and 7,812 are due).
// These 1,000-part schemas keep their verdict.
func TestPartsLookedUpForEveryNameIndexOrKeywordAreCharged(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name    string
		part    func(int) string
		extra   string
		lookups int // at least, in one comparison of the two conjunctions
	}{
		{"names × parts of both sides", oneProperty, "", n * 2 * n},
		{"prefixItems indices × parts of both sides", noItemSchema, prefixItems(n), n * 2 * n},
		{"acceptor parts × producer parts, not (sameKeyword)", negated, "", n * n / 2},
		{"acceptor parts × producer parts, contains (sameGroup)", contained, "", n * n / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := checkItself(t, manyPartsSchema(n, tc.part, tc.extra))
			if c.work < tc.lookups/valuesPerStep {
				t.Errorf("a %d-part allOf compared with itself: %d units of work charged, want at least %d (%d lookups, %d a unit): the lookups are not charged",
					n, c.work, tc.lookups/valuesPerStep, tc.lookups, valuesPerStep)
			}
			if r.Verdict != Compatible {
				t.Errorf("a %d-part allOf compared with itself: %s %+v, want compatible (within the bounds)", n, r.Verdict, r.Findings[:min(2, len(r.Findings))])
			}
		})
	}
}

// TestConjunctionPastTheWorkBoundByItsLookupsIsTooComplex: the lookups a
// comparison charges stop it at the check's work bound, Unknown
// (too_complex), never Compatible, and what is looked up or walked
// stays within what MaxValueWork pays for.
//
//   - An allOf of 2,500 single-property parts (73 KB; the offline
//     compiler takes it) costs 12.5 million lookups a comparison: the
//     check is too_complex and charges at most MaxValueWork and one
//     part's lookups (before: compatible after 12.5 million lookups
//     charged nothing).
//   - An allOf of 100 parts, each listing a property and carrying
//     "unevaluatedProperties" next to an "anyOf" (what it evaluates
//     depends on the instance), 7 KB: each name met each part's own
//     schema (evaluatedIn) and made a finding, at every one of 100
//     producer splits: 2 million own-schema passes (~3 s; 200 parts,
//     14 KB: 22 s; 1,000 parts, 72 KB: 5 minutes 33 s for one check).
//     Each uncertain pass is now charged ownPartLookups + uncertainPartLookups a
//     part: the passes stay within 2 × MaxValueWork, and each
//     comparison keeps a part's finding once.
func TestConjunctionPastTheWorkBoundByItsLookupsIsTooComplex(t *testing.T) {
	uneval := func(i int) string {
		return fmt.Sprintf(`{"properties":{"p%05d":{}},"unevaluatedProperties":false,"anyOf":[{}]}`, i)
	}
	for _, tc := range []struct {
		name string
		n    int
		part func(int) string
		// most bounds what the check looked up (lookups) or walked
		// (own-schema parts).
		most  int
		count func(c *checker) int
	}{
		{"2,500 single-property parts", 2500, oneProperty, (MaxValueWork+1)*valuesPerStep + 2*2500, func(c *checker) int { return c.lookups }},
		{"100 parts with unevaluatedProperties", 100, uneval, (MaxValueWork + 1) * valuesPerStep / (ownPartLookups + uncertainPartLookups), func(c *checker) int { return c.ownWalked }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := checkItself(t, manyPartsSchema(tc.n, tc.part, ""))
			if got := tc.count(c); got > tc.most {
				t.Errorf("a %d-part allOf compared with itself: %d looked up, want at most %d (%d units of work, %d steps)", tc.n, got, tc.most, c.work, c.steps)
			}
			if r.Verdict == Compatible || !hasRule(r, "too_complex") {
				t.Errorf("a %d-part allOf past the work bound: %s %+v, want unknown (too_complex)", tc.n, r.Verdict, r.Findings[:min(2, len(r.Findings))])
			}
		})
	}
}

// BenchmarkPropertyLookupCost times one check of each hostile shape of
// TestConjunctionPastTheWorkBoundByItsLookupsIsTooComplex, and of 2,500
// parts each negating a value of its own (sameKeyword), run to the work
// bound, and reports the time a unit of work costs ("ns/unit"): what
// uncertainPartLookups and valuesPerStep are set by. A flatten-bound check
// (BenchmarkFlattenCost, "hostile", about 1,800 ns a unit here) is the
// yardstick; names measured about 3,700, own schemas and "not" about
// 1,800 to 2,000.
func BenchmarkPropertyLookupCost(b *testing.B) {
	uneval := func(i int) string {
		return fmt.Sprintf(`{"properties":{"p%05d":{}},"unevaluatedProperties":false,"anyOf":[{}]}`, i)
	}
	for _, bc := range []struct {
		name string
		n    int
		part func(int) string
	}{{"names", 2500, oneProperty}, {"own schemas", 200, uneval}, {"not", 2500, negated}} {
		x, y := parsedTwice(b, manyPartsSchema(bc.n, bc.part, ""))
		b.Run(bc.name, func(b *testing.B) {
			units := 0
			for b.Loop() {
				c := &checker{a: x.s, b: y.s, memo: map[string]int{}, assumed: maxInt}
				if r := c.run("s.json", "s.json"); r.Verdict == Compatible {
					b.Fatalf("%s: %s, want unknown (past the work bound)", bc.name, r.Verdict)
				}
				units += c.work
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(units, 1)), "ns/unit")
		})
	}
}

// closedMixins is an object schema closed by unevaluatedProperties
// whose allOf refers to k mixins of p plain string properties each, one
// more optional integer property in the last mixin when added.
func closedMixins(k, p int, added bool) string {
	refs := make([]string, k)
	defs := make([]string, k)
	for i := range k {
		refs[i] = fmt.Sprintf(`{"$ref":"#/$defs/m%d"}`, i)
		ps := make([]string, p)
		for j := range p {
			ps[j] = fmt.Sprintf(`"f%d_%d":{"type":"string","maxLength":64}`, i, j)
		}
		if added && i == k-1 {
			ps = append(ps, `"added":{"type":"integer"}`)
		}
		defs[i] = fmt.Sprintf(`"m%d":{"type":"object","properties":{%s}}`, i, strings.Join(ps, ","))
	}
	return `{"type":"object","unevaluatedProperties":false,"allOf":[` + strings.Join(refs, ",") +
		`],"$defs":{` + strings.Join(defs, ",") + `}}`
}

// TestClosedRecordOfManyMixinsStaysCompatible: an honest closed record
// (unevaluatedProperties false over an allOf of mixins of plain
// properties) whose new version adds one optional property is backward
// compatible. COMPAT-17 first charged every own-schema pass 32 lookups a
// part whether it ended certain or not, so such a record of 70 mixins of
// 20 properties (1,400 names, 62 KB) became unknown (too_complex), and a
// bundle whose claim said compatible was refused at import (threat: a
// cost bound turning an honest upgrade into a refusal). A certain pass
// now costs a lookup a part; the 80 × 20 record (71 KB) stays compatible.
func TestClosedRecordOfManyMixinsStaysCompatible(t *testing.T) {
	for _, tc := range []struct{ k, p int }{{10, 10}, {70, 20}, {80, 20}} {
		l := memLoader{files: map[string][]byte{
			"old.json": []byte(closedMixins(tc.k, tc.p, false)),
			"new.json": []byte(closedMixins(tc.k, tc.p, true)),
		}}
		if r := Backward(NewSource(l), "old.json", NewSource(l), "new.json"); r.Verdict != Compatible {
			t.Errorf("a closed record of %d mixins of %d properties adding an optional one: %s %+v, want compatible",
				tc.k, tc.p, r.Verdict, r.Findings[:min(2, len(r.Findings))])
		}
	}
}

// closedPatterns is an object schema closed by unevaluatedProperties
// listing n properties and p patterns that match none of them; d is its
// description (a change a check finds compatible).
func closedPatterns(n, p int, d string) string {
	var ps, pats []string
	for i := range n {
		ps = append(ps, fmt.Sprintf(`"n%d":{}`, i))
	}
	for j := range p {
		pats = append(pats, fmt.Sprintf(`"^q%d$":{}`, j))
	}
	return `{"type":"object","description":"` + d + `","unevaluatedProperties":false,"properties":{` +
		strings.Join(ps, ",") + `},"patternProperties":{` + strings.Join(pats, ",") + `}}`
}

// TestOwnSchemaPatternsMatchedForEveryNameAreCharged: a pass over an own
// schema (unevaluatedProperties) matches each name against every pattern
// of the part, and nothing of it was charged (a match of a short pattern
// on a short name rounded down to no work): a closed schema of 4,990
// names and 4,990 patterns (117 KB, the offline compiler takes it) took
// 6.4 s for one check that charged a fifth of the work bound (threat: a
// certain but costly pass, hundreds of such checks in one bundle's
// budget at import). Each pattern is now charged patternLookups, and the
// matches' instructions × bytes add up over the check: a 400 × 400
// schema's check charges at least its matches, and the 4,990 × 4,990
// one is too_complex.
func TestOwnSchemaPatternsMatchedForEveryNameAreCharged(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want Verdict
	}{{400, Compatible}, {4990, Unknown}} {
		l := memLoader{files: map[string][]byte{
			"a.json": []byte(closedPatterns(tc.n, tc.n, "a")),
			"b.json": []byte(closedPatterns(tc.n, tc.n, "b")),
		}}
		a, b := NewSource(l), NewSource(l)
		c := &checker{a: a.s, b: b.s, memo: map[string]int{}, assumed: maxInt}
		r := c.run("a.json", "b.json")
		if r.Verdict != tc.want {
			t.Errorf("%d names and patterns: %s, want %s (%d units of work)", tc.n, r.Verdict, tc.want, c.work)
		}
		// Every name met every pattern at least once on one side.
		if most := tc.n * tc.n * patternLookups; tc.want == Compatible && c.lookups < most {
			t.Errorf("%d names and patterns: %d lookups charged, want at least %d (one name against each pattern)", tc.n, c.lookups, most)
		}
	}
}
