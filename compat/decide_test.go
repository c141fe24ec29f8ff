package compat

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestDecidedKeywordVerdicts pins the verdicts of the rules that decide
// oneOf overlaps, dependentRequired, not, if/then/else, dependentSchemas
// and contains from JSON Schema 2020-12 semantics: each case is a change
// whose answer the semantics settle (a request or result proven lost, or
// proven kept), or one they do not, which must stay unknown.
func TestDecidedKeywordVerdicts(t *testing.T) {
	const obj = `"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}`
	cases := []struct {
		name          string
		producer      string // old input (backward) or new output (forward)
		acceptor      string
		verdict       Verdict
		rule, pointer string
	}{
		{"dependentRequired added refuses a request holding the trigger alone",
			`{` + obj + `}`, `{` + obj + `,"dependentRequired":{"a":["b"]}}`, Incompatible, "dependency_added", "/dependentRequired"},
		{"dependentRequired implied by required is kept",
			`{` + obj + `,"required":["b"]}`, `{` + obj + `,"dependentRequired":{"a":["b"]}}`, Compatible, "", ""},
		{"dependentRequired implied by the producer's own chain is kept",
			`{` + obj + `,"dependentRequired":{"a":["c"],"c":["b"]}}`, `{` + obj + `,"dependentRequired":{"a":["b"]}}`, Compatible, "", ""},
		{"dependentRequired on a trigger the producer forbids is kept",
			`{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":false}`, `{` + obj + `,"dependentRequired":{"a":["b"]}}`, Compatible, "", ""},
		{"dependentRequired on a trigger whose value is not proven to exist stays unknown",
			`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`, `{"type":"object","dependentRequired":{"a":["b"]}}`, Unknown, "dependency_added", "/dependentRequired"},
		{"dependentRequired beyond the producer's maxProperties stays unknown",
			`{"type":"object","maxProperties":0}`, `{"type":"object","dependentRequired":{"a":["b"]}}`, Unknown, "dependency_added", "/dependentRequired"},
		{"anyOf number or integer turned into oneOf loses every integer",
			`{"anyOf":[{"type":"number"},{"type":"integer"}]}`, `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, Incompatible, "one_of_ambiguous", "/oneOf"},
		{"oneOf whose narrower branch lies inside the producer loses its instances",
			`{"type":"string"}`, `{"oneOf":[{"type":"string"},{"type":"string","maxLength":5}]}`, Incompatible, "one_of_ambiguous", "/oneOf"},
		{"oneOf of disjoint types covers a type list",
			`{"type":["string","null"]}`, `{"oneOf":[{"type":"string"},{"type":"null"}]}`, Compatible, "", ""},
		{"oneOf with a second branch whose instances are not proven reachable stays unknown",
			`{"type":"string"}`, `{"oneOf":[{"type":"string"},{"type":"string","pattern":"^x"}]}`, Unknown, "one_of_ambiguous", "/oneOf"},
		{"oneOf of two integer branches overlapping on a bounded producer",
			`{"type":"integer","minimum":0,"maximum":3}`, `{"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]}`, Incompatible, "one_of_ambiguous", "/oneOf"},
		{"oneOf over an empty integer range is not claimed to lose anything",
			`{"type":"integer","minimum":1,"maximum":0}`, `{"oneOf":[{"type":"integer"},{"type":"number"}]}`, Unknown, "one_of_ambiguous", "/oneOf"},
		{"not added that a producer instance matches",
			`{"type":"string"}`, `{"type":"string","not":{"const":"x"}}`, Incompatible, "not_matched", "/not"},
		{"not added that no producer instance can match",
			`{"type":"integer"}`, `{"not":{"type":"string"}}`, Compatible, "", ""},
		{"not added whose overlap with the producer is not proven stays unknown",
			`{"type":"string"}`, `{"not":{"pattern":"^x"}}`, Unknown, "undecided_keyword", "/not"},
		{"if met by every producer instance applies then",
			`{"type":"object","properties":{"k":{"const":1}},"required":["k"]}`, `{"if":{"required":["k"]},"then":{"required":["x"]}}`, Incompatible, "required_added", "/then/required"},
		{"if met by no producer instance applies else",
			`{"type":"string"}`, `{"if":{"type":"object"},"then":false,"else":{"type":"string"}}`, Compatible, "", ""},
		{"if met by no producer instance with else refusing it",
			`{"type":"string"}`, `{"if":{"type":"object"},"else":{"type":"integer"}}`, Incompatible, "type_narrowed", "/else/type"},
		{"if the producer does not settle stays unknown",
			`{"type":"object"}`, `{"if":{"required":["k"]},"then":{"required":["x"]}}`, Unknown, "undecided_keyword", "/if"},
		{"the same if with another then is not the same condition",
			`{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, `{"type":"object","if":{"required":["a"]},"then":{"required":["b","c"]}}`, Unknown, "undecided_keyword", "/if"},
		{"the same contains with a higher minContains is not the same assertion",
			`{"type":"array","contains":{"type":"string"}}`, `{"type":"array","contains":{"type":"string"},"minContains":2}`, Unknown, "undecided_keyword", "/contains"},
		{"dependentSchemas added refuses an object holding the trigger",
			`{` + obj + `}`, `{` + obj + `,"dependentSchemas":{"a":{"required":["b"]}}}`, Incompatible, "required_added", "/dependentSchemas/a/required"},
		{"dependentSchemas the producer's objects already meet is kept",
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","minimum":1}}}`, `{"dependentSchemas":{"a":{"properties":{"b":{"minimum":0}}}}}`, Compatible, "", ""},
		{"an integer range wider than the listed values loses the unlisted integer",
			`{"type":"integer","minimum":1,"maximum":4}`, `{"enum":[1,2,3]}`, Incompatible, "enum_narrowed", "/enum"},
		{"an integer range every integer of which is listed is kept",
			`{"type":"integer","exclusiveMinimum":0,"maximum":6,"multipleOf":2}`, `{"enum":[2,4,6]}`, Compatible, "", ""},
		{"an integer range too large to enumerate stays unknown",
			`{"type":"integer","minimum":0,"maximum":100000}`, `{"enum":[1]}`, Unknown, "enum_narrowed", "/enum"},
		{"listed values spread over anyOf branches are kept",
			`{"enum":["a","b"]}`, `{"anyOf":[{"const":"a"},{"const":"b"}]}`, Compatible, "", ""},
		{"listed values each matching exactly one oneOf branch are kept",
			`{"enum":["a","b"]}`, `{"oneOf":[{"const":"a"},{"const":"b"}]}`, Compatible, "", ""},
		{"an anyOf branch narrowed where the other branches cannot match loses the instance",
			`{"anyOf":[{"type":"object"},{"type":"integer"}]}`, `{"anyOf":[{"type":"object","required":["a"]},{"type":"integer"}]}`, Incompatible, "required_added", "/anyOf/0/required"},
		{"values of a producing oneOf that match two branches are no instances",
			`{"oneOf":[{"enum":["a",1]},{"enum":["en","a",1]}]}`, `{"enum":["en"]}`, Unknown, "enum_narrowed", "/enum"},
		{"dependentSchemas on a trigger the producer forbids is kept",
			`{"type":"object","properties":{"a":false}}`, `{"dependentSchemas":{"a":false}}`, Compatible, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]json.RawMessage{"schema.json": json.RawMessage(tc.producer)}
			a := map[string]json.RawMessage{"schema.json": json.RawMessage(tc.acceptor)}
			r := Subsumes(NewSource(loaderOf(p)), "schema.json", NewSource(loaderOf(a)), "schema.json")
			e := expectation{Verdict: tc.verdict, Rule: tc.rule}
			if tc.verdict != Compatible {
				e.Pointer = &tc.pointer
			}
			if err := matches(r, e); err != nil {
				t.Fatal(err)
			}
			if r.Verdict == Compatible {
				soundness(t, tc.name, p, a, 11, 400)
			}
		})
	}
}

// decidedGen draws schema pairs around the decided keywords: an acceptor
// that adds a oneOf, dependentRequired, not, if/then/else or
// dependentSchemas to (a variant of) the producer, listed values against
// integer ranges and unions, and unions of objects.
type decidedGen struct{ schemaGen }

func (g decidedGen) pair() (producer, acceptor any) {
	names := []any{"a", "b", "c"}
	pick := func() any { return names[g.r.IntN(len(names))] }
	values := []any{"en", "a", json.Number("1"), json.Number("2"), nil}
	someValues := func() []any {
		var out []any
		for _, v := range values {
			if g.r.IntN(2) == 0 {
				out = append(out, v)
			}
		}
		if out == nil {
			out = values[:1]
		}
		return out
	}
	switch g.r.IntN(9) {
	case 6:
		lo := g.r.IntN(3)
		return map[string]any{"type": "integer", "minimum": json.Number(strconv.Itoa(lo)), "maximum": json.Number(strconv.Itoa(lo + g.r.IntN(3)))},
			map[string]any{"enum": []any{json.Number("0"), json.Number("1"), json.Number("2"), json.Number("3")}[:1+g.r.IntN(4)]}
	case 7:
		var branches []any
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			branches = append(branches, map[string]any{"enum": someValues()})
		}
		kw := []string{"anyOf", "oneOf"}[g.r.IntN(2)]
		return map[string]any{"enum": someValues()}, map[string]any{kw: branches}
	case 8:
		return map[string]any{"anyOf": []any{g.object(0), g.leaf()}}, map[string]any{"anyOf": []any{g.object(0), g.leaf()}}
	case 0:
		var p any = g.leaf()
		if g.r.IntN(2) == 0 {
			p = map[string]any{"anyOf": []any{g.leaf(), g.leaf()}}
		}
		return p, map[string]any{"oneOf": []any{g.leaf(), g.leaf(), g.leaf()}[:2+g.r.IntN(2)]}
	case 1:
		o := g.object(1)
		n := g.object(1)
		if g.r.IntN(2) == 0 {
			n = copyMap(o)
		}
		n["dependentRequired"] = map[string]any{pick().(string): []any{pick()}}
		return o, n
	case 2:
		l := g.leaf()
		n := copyMap(l)
		n["not"] = g.leaf()
		return l, n
	case 3:
		o := g.object(1)
		n := copyMap(o)
		n["if"] = map[string]any{"properties": map[string]any{"a": g.leaf()}, "required": []any{"a"}}
		n["then"] = map[string]any{"required": []any{pick()}}
		if g.r.IntN(2) == 0 {
			n["else"] = g.object(0)
		}
		return o, n
	case 4:
		o := g.object(1)
		n := copyMap(o)
		n["dependentSchemas"] = map[string]any{pick().(string): g.object(0)}
		return o, n
	default:
		var p any = map[string]any{"type": []any{"integer", "string", "null"}[g.r.IntN(3)]}
		if g.r.IntN(2) == 0 {
			p = g.leaf()
		}
		return p, map[string]any{"oneOf": []any{
			map[string]any{"type": "number"}, map[string]any{"type": "integer", "minimum": json.Number(strconv.Itoa(g.r.IntN(3)))},
			map[string]any{"type": "string"}, map[string]any{"type": "null"}}[g.r.IntN(2):]}
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestDecidedKeywordsNeverUnsafe is the property test of the decided
// keywords on random pairs (seeded): a compatible verdict never loses an
// instance valid for the producer, in either direction, and an
// incompatible verdict is backed by a lost instance the generator finds in
// most cases (an unfounded "incompatible" would refuse
// a range policy the schemas allow).
func TestDecidedKeywordsNeverUnsafe(t *testing.T) {
	g := decidedGen{schemaGen{r: rand.New(rand.NewPCG(23, 4))}}
	compatibles, tried, incompat, witnessed := 0, 0, 0, 0
	for i := 0; i < 250; i++ {
		a, b := g.pair()
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		pa := map[string]json.RawMessage{"schema.json": ja}
		pb := map[string]json.RawMessage{"schema.json": jb}
		for d, pair := range [][2]map[string]json.RawMessage{{pa, pb}, {pb, pa}} {
			label := "random pair " + strconv.Itoa(i) + "/" + strconv.Itoa(d)
			if n := soundness(t, label, pair[0], pair[1], uint64(i)*2+uint64(d)+1, 150); n > 0 {
				compatibles++
				tried += n
			}
			r := Subsumes(NewSource(loaderOf(pair[0])), "schema.json", NewSource(loaderOf(pair[1])), "schema.json")
			if r.Verdict != Incompatible {
				continue
			}
			incompat++
			if lostInstance(t, pair[0], pair[1], uint64(i)+99, 400) {
				witnessed++
			}
		}
	}
	t.Logf("%d compatible pairs (%d instances), %d incompatible verdicts, %d with a lost instance found", compatibles, tried, incompat, witnessed)
	if compatibles < 50 || tried < 2000 || incompat < 20 {
		t.Fatalf("only %d compatible pairs with %d instances and %d incompatible ones: the property test is too weak", compatibles, tried, incompat)
	}
	// Random objects rarely hold every required property with a listed
	// value, so some real losses go unwitnessed (each was checked by hand
	// when this bound was set).
	if witnessed*4 < incompat*3 {
		t.Fatalf("a lost instance was found for only %d of %d incompatible verdicts", witnessed, incompat)
	}
}

// lostInstance reports whether a random instance valid for the producer
// is refused by the acceptor.
func lostInstance(t *testing.T, producer, acceptor map[string]json.RawMessage, seed uint64, n int) bool {
	t.Helper()
	ps, as := compiled(t, producer), compiled(t, acceptor)
	if ps == nil || as == nil {
		return false
	}
	g := newInstanceGen(seed, producer, acceptor)
	for i := 0; i < n; i++ {
		inst := g.value(3)
		if validUnder(t, ps, inst) && !validUnder(t, as, inst) {
			return true
		}
	}
	return false
}

// TestSplitBudgetLeavesUnionsUnknown: splitting the producer by listed
// value multiplies comparisons; past MaxSplits a union that needs the
// split is unknown (too_complex), never compatible by default.
func TestSplitBudgetLeavesUnionsUnknown(t *testing.T) {
	var vals, branches []string
	for i := 0; i < maxSplit; i++ {
		vals = append(vals, strconv.Itoa(i))
		branches = append(branches, `{"const":`+strconv.Itoa(i)+`}`)
	}
	producer := `{"enum":[` + strings.Join(vals, ",") + `]}`
	oneOf := `{"oneOf":[` + strings.Join(branches, ",") + `]}`
	check := func(n int) Report {
		all := make([]string, n)
		for i := range all {
			all[i] = oneOf
		}
		p := map[string]json.RawMessage{"schema.json": json.RawMessage(producer)}
		a := map[string]json.RawMessage{"schema.json": json.RawMessage(`{"allOf":[` + strings.Join(all, ",") + `]}`)}
		return Subsumes(NewSource(loaderOf(p)), "schema.json", NewSource(loaderOf(a)), "schema.json")
	}
	if r := check(1); r.Verdict != Compatible {
		t.Fatalf("one oneOf of every listed value: %s %+v", r.Verdict, r.Findings)
	}
	n := MaxSplits/maxSplit + 1
	r := check(n)
	if r.Verdict != Unknown || len(r.Findings) == 0 || r.Findings[0].Rule != "too_complex" {
		t.Fatalf("%d such oneOfs: %s %+v, want unknown too_complex", n, r.Verdict, r.Findings)
	}
}

// TestNumbersCompareByValue: listed numbers are equal by value whatever
// their text (the fast path for canonical integers must not change that).
func TestNumbersCompareByValue(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		want bool
	}{
		{"same integer text", "12", "12", true},
		{"different integers", "12", "13", false},
		{"integer and its decimal form", "1", "1.0", true},
		{"integer and its exponent form", "10", "1e1", true},
		{"minus zero and zero", "-0", "0", true},
		{"negative integers", "-7", "-7", true},
		{"negative and positive", "-7", "7", false},
		{"large integers differing in the last digit", "123456789012345678901", "123456789012345678902", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := equal(json.Number(tc.a), json.Number(tc.b)); got != tc.want {
				t.Fatalf("equal(%s, %s) = %v", tc.a, tc.b, got)
			}
			if got := equal(json.Number(tc.b), json.Number(tc.a)); got != tc.want {
				t.Fatalf("equal(%s, %s) = %v", tc.b, tc.a, got)
			}
		})
	}
}
