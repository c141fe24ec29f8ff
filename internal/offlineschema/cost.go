package offlineschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"math/big"
	"math/bits"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// MaxValidationCost caps the weighted subschema evaluations one Validate
// may need in the worst case: Validate computes an upper bound from the
// compiled schema and the shape of the value (how many nodes at each
// depth) and refuses a value over it (1001 validation_too_costly) before
// the library starts. jsonschema v5 evaluates every branch of anyOf,
// oneOf and allOf, so a schema recursing through several branches is
// exponential in the depth of the value (docs/FORMAT.md §6). An
// evaluation k deep weighs 1 + (k+1)·chain/6, chain being the longest
// in-place chain of the schema (costTable.weight): a failing evaluation
// costs the library in proportion to its scope. 2^22 lets a value of
// DefaultMaxItems items a few levels deep through a schema that costs at
// most 16 weighted evaluations a node (the sample and test schemas of the
// repository need at most 15 at depth 3); BenchmarkValidationBudget
// measures what the budget costs. The same budget pays for regular
// expression matching (program size × bytes of text, textPerEvaluation
// to an evaluation) and for the comparisons of "uniqueItems"
// (uniqueWork), both charged before the library starts (checkCost).
const MaxValidationCost = 1 << 22

// ErrValidationTooCostly (1001): the worst case of validating a value
// against its schema is over MaxValidationCost subschema evaluations. The
// value may be valid; it was not validated. The same value is refused
// every time (not retryable).
const ErrValidationTooCostly amp.ErrName = "validation_too_costly"

// costInf is the saturated cost: over any budget, and no sum or product of
// two costs below it overflows.
const costInf = uint64(1) << 62

func satAdd(a, b uint64) uint64 {
	if s := a + b; s < costInf {
		return s
	}
	return costInf
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 || lo >= costInf {
		return costInf
	}
	return lo
}

// costNode is one compiled (sub)schema in the cost analysis, its
// applicators as indexes of other nodes.
type costNode struct {
	// inplace: applicators evaluated at the same instance node, each
	// once per evaluation ($ref, allOf, anyOf, oneOf, not, if, then,
	// else, dependentSchemas, dependencies).
	inplace []int
	// dynamic: for $recursiveRef and $dynamicRef, every schema the
	// reference may resolve to at run time; one of them is evaluated.
	dynamic [][]int
	// A child node receives at most one of props (properties and
	// additionalProperties: one name matches one of them), every one of
	// pattern (patternProperties), and unevalProps; at most one of
	// items (items, additionalItems: one index, one of them), one of
	// items2020 (prefixItems, items), and contains and unevalItems.
	props, pattern, unevalProps   []int
	items, items2020, arrayAlways []int
	// names: propertyNames, evaluated on each member name (a string).
	names []int
	// sat: the schema can make the library do work this analysis does
	// not model (a contentSchema); it costs costInf.
	sat bool
	// group: a set of schemas one dynamic reference may resolve to; the
	// node costs the most of them and evaluates nothing itself.
	group []int
	// self: what evaluating the schema's own keywords counts for
	// (keywordSelf): 1, 2 for every name of "required",
	// "dependentRequired" and "dependencies", and 1 for every 16
	// "properties" and "dependentSchemas" members and every 16 nodes of
	// the "enum" and "const" values (a number 16 × its numberSize).
	self uint64
	// compare: the "enum" members and "const" compared with the value;
	// each comparison may convert every number of the value to a
	// math/big rational (measured by measureCompare).
	compare uint64
	// numeric: the math/big rationals the schema's own keywords build
	// from a number instance ("type" with "integer", and each of
	// "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum" and
	// "multipleOf", which compare with it); numericSelf: what those
	// keywords' own numbers cost each such comparison beyond an
	// evaluation (ratSize - 1 each, 0 for ordinary numbers).
	numeric, numericSelf uint64
	// text[τ]: the regular-expression instructions the schema's own
	// keywords run per byte of an instance of kind τ: for a string its
	// "pattern" (and formatInsts for a "format", lengthInsts for
	// "minLength" or "maxLength", contentInsts for a draft-07
	// "contentEncoding" or "contentMediaType"), for an object its
	// "patternProperties" names, matched against every member name.
	text [kinds]uint64
	// unique: "uniqueItems" is true (its work on an array is uniqueWork).
	unique bool
	// regex: "format" is "regex": a string is parsed as a regular
	// expression (its work is patternParseRanges of the string).
	regex bool
	// mismatch[τ]: "type" refuses an instance of kind τ; the library
	// then returns before any other keyword.
	mismatch [kinds]bool
}

// Kinds of instance node the analysis tells apart: "type" stops the
// validator early on the others, so an object's applicators never run on
// an array.
const (
	kindObject = iota
	kindArray
	kindScalar
	kinds
)

// typeAllows reports whether a "type" list admits an instance of kind.
func typeAllows(types []string, kind int) bool {
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		switch {
		case t == "object":
			if kind == kindObject {
				return true
			}
		case t == "array":
			if kind == kindArray {
				return true
			}
		case kind == kindScalar:
			return true
		}
	}
	return false
}

// costTable is the result of the analysis: perDepth[k] bounds the
// subschema evaluations any one instance node at depth k (0: the root
// value) receives in one Validate.
type costTable struct {
	perDepth [MaxDepth + 1]uint64
	// text[k] bounds the regular-expression instructions any one
	// instance node at depth k runs per byte of its text (a string's
	// bytes, an object's member names) in one Validate.
	text [MaxDepth + 1]uint64
	// unique[k] bounds the evaluations of a "uniqueItems" schema any one
	// array at depth k receives in one Validate; hasUnique: some is not 0.
	unique    [MaxDepth + 1]uint64
	hasUnique bool
	// regex[k] bounds the evaluations of a "format": "regex" schema any
	// one string at depth k receives in one Validate; hasRegex: some is
	// not 0.
	regex    [MaxDepth + 1]uint64
	hasRegex bool
	// compare[k] bounds the "enum" members and "const" values any one
	// instance node at depth k is compared with in one Validate;
	// hasCompare: some is not 0.
	compare    [MaxDepth + 1]uint64
	hasCompare bool
	// numeric[k] bounds the math/big rationals the numeric keywords
	// build from, and compare with, any one number at depth k in one
	// Validate (costNode.numeric); hasNumeric: some is not 0.
	numeric    [MaxDepth + 1]uint64
	hasNumeric bool
	// weight[k] is what one evaluation at depth k counts for: 1 plus a
	// sixth of the longest dynamic scope it can run in. The library
	// builds a failing evaluation's keyword location from its whole
	// scope, so a failure k deep costs about as much as that many
	// successes (BenchmarkValidationBudget).
	weight [MaxDepth + 1]uint64
	// passes: the measures costLevels computed a table of (countsIn),
	// 3 to 6.
	passes int
}

// analyzeCost computes the costTable of root. extra are compiled schemas
// the library may reach without an exported field leading to them (the
// targets of $dynamicRef found in the documents). dynamicUnknown makes
// every $dynamicRef that can resolve dynamically cost costInf (used when
// those targets could not all be found).
func analyzeCost(root *jsonschema.Schema, extra []*jsonschema.Schema, dynamicUnknown bool) *costTable {
	return costLevels(costGraph(root, extra, dynamicUnknown), countsIn)
}

// costGraph is the nodes of analyzeCost: every schema root, extra and
// their applicators reach, and a group node for each set of dynamic
// targets.
func costGraph(root *jsonschema.Schema, extra []*jsonschema.Schema, dynamicUnknown bool) []costNode {
	ids := map[*jsonschema.Schema]int{}
	var schemas []*jsonschema.Schema
	var queue []*jsonschema.Schema
	id := func(s *jsonschema.Schema) int {
		if n, ok := ids[s]; ok {
			return n
		}
		ids[s] = len(schemas)
		schemas = append(schemas, s)
		queue = append(queue, s)
		return ids[s]
	}
	id(root)
	for _, s := range extra {
		id(s)
	}
	// Every reachable schema first, for the dynamic target sets.
	for i := 0; i < len(queue); i++ {
		forEachApplicator(queue[i], func(t *jsonschema.Schema) { id(t) })
	}
	recursiveAnchors := []int{}
	dynamicAnchors := map[string][]int{}
	for i, s := range schemas {
		if s.RecursiveAnchor {
			recursiveAnchors = append(recursiveAnchors, i)
		}
		if s.DynamicAnchor != "" {
			dynamicAnchors[s.DynamicAnchor] = append(dynamicAnchors[s.DynamicAnchor], i)
		}
	}
	// One node for each set of candidate targets, costing the most of its
	// members: every reference to the set is then one edge, not one per
	// member.
	nodes := make([]costNode, len(schemas), len(schemas)+1+len(dynamicAnchors))
	group := func(members []int) int {
		nodes = append(nodes, costNode{group: members})
		return len(nodes) - 1
	}
	recursiveGroup := group(recursiveAnchors)
	dynamicGroups := map[string]int{}
	for name, members := range dynamicAnchors {
		dynamicGroups[name] = group(members)
	}
	for i, s := range schemas {
		costEdges(&nodes[i], s, ids, recursiveGroup, dynamicGroups, dynamicUnknown)
	}
	return nodes
}

// costEdges fills the node n of schema s with its edges (by kind of
// instance they apply to) and its own cost; see analyzeCost.
func costEdges(n *costNode, s *jsonschema.Schema, ids map[*jsonschema.Schema]int, recursiveGroup int, dynamicGroups map[string]int, dynamicUnknown bool) {
	one := func(list *[]int, t *jsonschema.Schema) {
		if t != nil {
			*list = append(*list, ids[t])
		}
	}
	many := func(list *[]int, ts []*jsonschema.Schema) {
		for _, t := range ts {
			one(list, t)
		}
	}
	one(&n.inplace, s.Ref)
	one(&n.inplace, s.Not)
	one(&n.inplace, s.If)
	one(&n.inplace, s.Then)
	one(&n.inplace, s.Else)
	many(&n.inplace, s.AllOf)
	many(&n.inplace, s.AnyOf)
	many(&n.inplace, s.OneOf)
	for _, t := range s.DependentSchemas {
		one(&n.inplace, t)
	}
	for _, d := range s.Dependencies {
		if t, ok := d.(*jsonschema.Schema); ok {
			one(&n.inplace, t)
		}
	}
	if t := s.RecursiveRef; t != nil {
		targets := []int{ids[t]}
		if t.RecursiveAnchor {
			targets = append(targets, recursiveGroup)
		}
		n.dynamic = append(n.dynamic, targets)
	}
	if t := s.DynamicRef; t != nil {
		targets := []int{ids[t]}
		if t.DynamicAnchor != "" {
			if dynamicUnknown {
				n.sat = true
			}
			if g, ok := dynamicGroups[t.DynamicAnchor]; ok {
				targets = append(targets, g)
			}
		}
		n.dynamic = append(n.dynamic, targets)
	}
	for _, t := range s.Properties {
		one(&n.props, t)
	}
	if t, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		one(&n.props, t)
	}
	for _, t := range s.PatternProperties {
		one(&n.pattern, t)
	}
	one(&n.unevalProps, s.UnevaluatedProperties)
	one(&n.names, s.PropertyNames)
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		one(&n.items, it)
	case []*jsonschema.Schema:
		many(&n.items, it)
	}
	if t, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		one(&n.items, t)
	}
	many(&n.items2020, s.PrefixItems)
	one(&n.items2020, s.Items2020)
	one(&n.arrayAlways, s.Contains)
	one(&n.arrayAlways, s.UnevaluatedItems)
	if s.ContentSchema != nil || len(s.Extensions) > 0 {
		n.sat = true
	}
	for kind := range kinds {
		n.mismatch[kind] = !typeAllows(s.Types, kind)
	}
	n.self = keywordSelf(s)
	n.compare = uint64(len(s.Enum) + len(s.Constant))
	if s.Pattern != nil {
		n.text[kindScalar] = schemaPatternInsts(s.Pattern.String())
	}
	switch s.Format {
	case "":
	case "regex", "json-pointer", "relative-json-pointer", "ipv4", "ip-address", "uri-template":
		n.text[kindScalar] = satAdd(n.text[kindScalar], formatRegexInsts)
	default:
		n.text[kindScalar] = satAdd(n.text[kindScalar], formatInsts)
	}
	n.text[kindScalar] = satAdd(n.text[kindScalar], stringInsts(s))
	for re := range s.PatternProperties {
		n.text[kindObject] = satAdd(n.text[kindObject], schemaPatternInsts(re.String()))
	}
	n.numeric, n.numericSelf = numericWork(s)
	n.unique = s.UniqueItems
	n.regex = s.Format == "regex"
}

// keywordSelf is costNode.self of s: what the library's own keywords of s
// cost on one instance node whatever the node, in evaluations. It walks
// every name of "required" (and of the "dependentRequired" and
// "dependencies" lists of the names present), quoting each missing one
// into its error, which Validate then turns into a Violation each (some
// 2.3 µs a name: two evaluations each); it looks up every "properties" and
// "dependentSchemas" member in an object (tens of ns, a sixteenth); it
// compares the value with every "enum" member and the "const", walking
// as deep as the member (compareUnits), and formats a scalar "const"
// that fails into its error (a sixteenth a byte). Charged 1 for a whole
// "enum", a 300,000-name "required" cost 3 s per object and a 2,000
// member "enum" of 100-number arrays 0.3 s per array
// (docs/SPEC-DECISIONS.md SCHEMA-8).
func keywordSelf(s *jsonschema.Schema) uint64 {
	names := uint64(len(s.Required))
	for _, list := range s.DependentRequired {
		names = satAdd(names, uint64(len(list)))
	}
	for _, d := range s.Dependencies {
		if list, ok := d.([]string); ok {
			names = satAdd(names, uint64(len(list)))
		}
	}
	units := uint64(len(s.Properties) + len(s.DependentSchemas))
	for _, e := range s.Enum {
		units = satAdd(units, compareUnits(e, 0))
	}
	for _, c := range s.Constant {
		units = satAdd(units, compareUnits(c, 0))
		if str, ok := c.(string); ok {
			units = satAdd(units, uint64(len(str)))
		}
	}
	return satAdd(satAdd(1, satMul(2, names)), units/16)
}

// compareUnits is what comparing a value with the schema value v costs
// the library at most, in sixteenths of an evaluation: 1 a node, a
// string 1 more a 64 bytes, a member name likewise, and a number 16 ×
// numberSize (the library compares numbers as math/big rationals built
// from their text, about an evaluation each). The walk stops at
// MaxSchemaNesting (schema documents nest no deeper).
func compareUnits(v any, depth int) uint64 {
	if depth > MaxSchemaNesting {
		return costInf
	}
	switch x := v.(type) {
	case string:
		return 1 + uint64(len(x))/uniqueBytesPerNode
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return satMul(16, numberSize(x))
	case []any:
		c := uint64(1)
		for _, e := range x {
			c = satAdd(c, compareUnits(e, depth+1))
		}
		return c
	case map[string]any:
		c := uint64(1)
		for name, e := range x {
			c = satAdd(c, satAdd(1+uint64(len(name))/uniqueBytesPerNode, compareUnits(e, depth+1)))
		}
		return c
	}
	return 1
}

// formatInsts is what a "format" check counts for per byte of a string,
// in regular-expression instructions: every format Compile's validator
// asserts reads the string a few times at most (the library's quadratic
// "duration" and "period" are replaced by one-pass checks, formats.go).
// formatRegexInsts is "regex", which parses it (isBoundedRegex: 0.4 to
// 2 µs a byte for hostile strings on a loaded 2-core machine, where an
// evaluation unit is 0.1 to 1.3 µs), and the formats the library checks
// with strings.Split, which allocates a string per separator ("/" or
// "."): 60 to 280 ns a byte of "////…".
const (
	formatInsts      = 16
	formatRegexInsts = 64
)

// What the library's other string keywords count for per byte of a
// string, in regular-expression instructions, at each evaluation:
// "minLength" and "maxLength" copy the string and count its runes
// (lengthInsts: 0.3 to 2 ns a byte); a draft-07 "contentEncoding":
// "base64" decodes it into a new buffer (contentEncodingInsts: about 1 ns
// a byte), and "contentMediaType": "application/json" decodes it with
// encoding/json into Go values (contentMediaInsts: up to 65 ns and 48
// bytes allocated a byte of "[1,1,…" on a loaded 2-core machine, like
// "regex"). Uncharged, one 1 MiB string against 4,096 evaluations of
// "maxLength" took 3 s, of "contentMediaType" 6 minutes, within the
// budget (docs/SPEC-DECISIONS.md SCHEMA-10).
const (
	lengthInsts          = 2
	contentEncodingInsts = 4
	contentMediaInsts    = formatRegexInsts
)

// stringInsts is what s's "minLength", "maxLength", "contentEncoding"
// and "contentMediaType" count for per byte of a string (lengthInsts,
// contentEncodingInsts, contentMediaInsts). The library asserts the
// content keywords for draft-07 only (Compile turns them into
// annotations from 2019-09 on, and earlier drafts have none); any
// encoding or media type is charged, registered or not.
func stringInsts(s *jsonschema.Schema) uint64 {
	c := uint64(0)
	if s.MinLength != -1 || s.MaxLength != -1 {
		c = lengthInsts
	}
	if s.Draft != jsonschema.Draft2019 && s.Draft != jsonschema.Draft2020 {
		if s.ContentEncoding != "" {
			c += contentEncodingInsts
		}
		if s.ContentMediaType != "" {
			c += contentMediaInsts
		}
	}
	return c
}

// numericWork returns costNode.numeric and numericSelf of s: the library
// builds a math/big rational from a number instance's text for "type"
// "integer" and again for its numeric keywords, and each of those
// compares with it (Cmp) or divides it ("multipleOf": Quo, then a gcd),
// at a cost that grows with the digits and exponents of both numbers:
// 0.5 µs for 1.5 and 0.5, 6 µs for a float near 1e-300 and a
// "multipleOf" near 1e-400, where an evaluation is 0.1 to 1.3 µs.
// Charged one evaluation, 262,143 such floats against 15 "anyOf"
// branches took 99 s (docs/SPEC-DECISIONS.md SCHEMA-9).
func numericWork(s *jsonschema.Schema) (numeric, self uint64) {
	if slices.Contains(s.Types, "integer") {
		numeric = 1
	}
	for _, r := range []*big.Rat{s.Minimum, s.ExclusiveMinimum, s.Maximum, s.ExclusiveMaximum, s.MultipleOf} {
		if r != nil {
			numeric++
			self = satAdd(self, ratSize(r)-1)
		}
	}
	return numeric, self
}

// ratSize is numberSize of a schema number the library holds as a
// math/big rational: 1, and 1 more per numberDigitsPerNode decimal
// digits of its numerator and denominator (a bit is 0.30103 digits), so
// that 1e-400 (a denominator of 401 digits) is 13 and 0.5 is 1.
func ratSize(r *big.Rat) uint64 {
	bitLen := uint64(r.Num().BitLen() + r.Denom().BitLen())
	return 1 + bitLen*30103/100000/numberDigitsPerNode
}

// textPerEvaluation is how many instructions × bytes of regular
// expression matching count as one evaluation against
// MaxValidationCost: Go's regexp runs its NFA at 10 to 30 ns per
// instruction and byte (a 9,000-instruction pattern on 20,000 bytes on a
// loaded 2-core machine), an evaluation 0.1 to 1.3 µs
// (BenchmarkValidationBudget).
const textPerEvaluation = 32

// schemaPatternInsts is PatternInsts of a compiled schema's pattern:
// Compile only accepts patterns within MaxPatternInsts, so an error here
// (never expected) costs the cap.
func schemaPatternInsts(p string) uint64 {
	n, err := PatternInsts(p)
	if err != nil {
		n = MaxPatternInsts
	}
	return uint64(n)
}

// forEachApplicator calls f with every subschema s applies, through every
// exported field the validator of jsonschema v5.3.1 walks: the one list
// of applicators that the compile index and the cost bound both use.
func forEachApplicator(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	one := func(t *jsonschema.Schema) {
		if t != nil {
			f(t)
		}
	}
	anyOne := func(v any) {
		switch v := v.(type) {
		case *jsonschema.Schema:
			one(v)
		case []*jsonschema.Schema:
			for _, t := range v {
				one(t)
			}
		}
	}
	for _, t := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.DynamicRef, s.Not, s.If, s.Then, s.Else,
		s.PropertyNames, s.UnevaluatedProperties, s.Items2020, s.Contains, s.UnevaluatedItems, s.ContentSchema} {
		one(t)
	}
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, t := range list {
			one(t)
		}
	}
	for _, t := range s.Properties {
		one(t)
	}
	for _, t := range s.PatternProperties {
		one(t)
	}
	for _, t := range s.DependentSchemas {
		one(t)
	}
	for _, d := range s.Dependencies {
		anyOne(d)
	}
	anyOne(s.AdditionalProperties)
	anyOne(s.Items)
	anyOne(s.AdditionalItems)
}

// costLevels computes, for k = 0..MaxDepth and each kind τ of instance
// node, A_τ(s, k): a bound on the evaluations that one evaluation of
// schema s at a node of kind τ causes at any one node k levels below it
// (k = 0: that node itself). With A*(t, k) the most of A_τ(t, k) over τ:
//
//	A_τ(s, k) = [k = 0]                              if "type" refuses τ
//	A_τ(s, k) = [k = 0] + Σ in-place A_τ(t, k) + Σ dynamic max A_τ(t, k) + child_τ(s, k)
//
// where child_τ(s, k), k >= 1, is what one child receives: for an object
// the most of props, the sum of pattern and unevalProps (A* at k-1), and
// for k = 1 the scalar cost of names; for an array the most of items, the
// most of items2020 and the sum of arrayAlways; nothing below a scalar. A
// same-node cycle (the library refuses static ones at compile time; a
// dynamic reference can only be over-approximated into one) costs
// costInf. The table is A*(root, k).
//
// The same recursion, with what a node's own keywords count for at k = 0
// replaced, gives the text, unique, regex, compare and numeric tables
// (measureText, measureUnique, measureRegex, measureCompare,
// measureNumeric), each where counts says it can matter (countsIn).
func costLevels(nodes []costNode, counts func(nodes []costNode, m int) bool) *costTable {
	table := &costTable{}
	chain := longestChain(nodes)
	for k := range table.weight {
		table.weight[k] = satAdd(1, satMul(uint64(k+1), chain)/6)
	}
	for m, out := range []*[MaxDepth + 1]uint64{&table.perDepth, &table.text, &table.unique, &table.regex, &table.compare, &table.numeric} {
		if !counts(nodes, m) {
			continue // left 0: it would change no verdict (countsIn)
		}
		table.passes++
		e := newCostEval(nodes)
		e.measure = m
		for k := 0; k <= MaxDepth; k++ {
			e.level(k)
			out[k] = e.star[0]
			if k == 0 {
				e.scalar0 = append([]uint64(nil), e.cur[kindScalar]...)
			}
		}
	}
	for _, u := range table.unique {
		table.hasUnique = table.hasUnique || u > 0
	}
	for _, r := range table.regex {
		table.hasRegex = table.hasRegex || r > 0
	}
	for _, c := range table.compare {
		table.hasCompare = table.hasCompare || c > 0
	}
	for _, c := range table.numeric {
		table.hasNumeric = table.hasNumeric || c > 0
	}
	return table
}

// countsIn says whether measure m's table is computed: always for the
// evaluations, text and regex (their own counts at an object evaluate
// its propertyNames schemas, which the evaluations count a level
// deeper), and for unique, compare and numeric only when the own
// keywords of some node of nodes count in it (costEval.self at k = 0:
// "uniqueItems", "enum" or "const", "type" "integer" or a numeric
// keyword). Where none does, such a table is 0 at every depth, or
// costInf at a depth where the evaluations' table is costInf too (a
// same-node cycle, or a node the analysis cannot model, costNode.sat:
// the recursion of every measure reaches it alike, and these measures'
// own counts evaluate no other node). A value with a node there is
// refused by the evaluations alone, and one with none adds nothing from
// the table: checkCost decides the same without it, so costLevels does
// not compute it (a pass of MaxDepth + 1 levels over every node and
// kind; docs/SPEC-DECISIONS.md SCHEMA-11).
func countsIn(nodes []costNode, m int) bool {
	switch m {
	case measureUnique, measureCompare, measureNumeric:
	default:
		return true
	}
	for i := range nodes {
		nd := &nodes[i]
		switch {
		case m == measureUnique && nd.unique,
			m == measureCompare && nd.compare > 0,
			m == measureNumeric && nd.numeric > 0:
			return true
		}
	}
	return false
}

// What a costEval counts: evaluations, regular-expression instructions
// per byte of text, evaluations of "uniqueItems", evaluations of
// "format": "regex", "enum" members and "const" values compared, or
// numbers converted and compared by the numeric keywords.
const (
	measureEvals = iota
	measureText
	measureUnique
	measureRegex
	measureCompare
	measureNumeric
)

// costEval holds costLevels' tables while it computes one level k after
// the other: A_τ(·, k) (cur) from A*(·, k-1) (star).
type costEval struct {
	nodes   []costNode
	measure int // measureEvals, measureText, measureUnique, measureRegex, measureCompare or measureNumeric
	k       int
	cur     [kinds][]uint64 // A_τ(·, k)
	state   [kinds][]uint8  // 0 new, 1 on the stack, 2 done
	star    []uint64        // A*(t, k-1), then A*(t, k) once level returns
	// scalar0 is A_scalar(t, 0), for propertyNames.
	scalar0 []uint64
}

// newCostEval allocates the tables of costLevels for nodes, once for
// every level.
func newCostEval(nodes []costNode) *costEval {
	n := len(nodes)
	e := &costEval{nodes: nodes, star: make([]uint64, n)}
	for kind := range kinds {
		e.cur[kind], e.state[kind] = make([]uint64, n), make([]uint8, n)
	}
	return e
}

// level computes A_τ(·, k) for every node and kind, then A*(·, k) into
// star.
func (e *costEval) level(k int) {
	e.k = k
	for kind := range kinds {
		clear(e.state[kind])
		if k > 0 && kind == kindScalar {
			clear(e.cur[kind]) // nothing lies below a scalar
			continue
		}
		for i := range e.nodes {
			e.eval(i, kind)
		}
	}
	for i := range e.star {
		e.star[i] = max(e.cur[kindObject][i], e.cur[kindArray][i], e.cur[kindScalar][i])
	}
}

// eval is A_kind(i, k), memoized in cur; a node met again while it is
// being evaluated (a same-node cycle) costs costInf.
func (e *costEval) eval(i, kind int) uint64 {
	switch e.state[kind][i] {
	case 1:
		return costInf
	case 2:
		return e.cur[kind][i]
	}
	nd := &e.nodes[i]
	if nd.group != nil {
		e.state[kind][i] = 1
		m := e.maxEval(nd.group, kind)
		e.cur[kind][i], e.state[kind][i] = m, 2
		return m
	}
	c := uint64(0)
	if e.k == 0 && e.measure == measureEvals {
		c = 1 // "type" itself
	}
	if nd.mismatch[kind] {
		e.cur[kind][i], e.state[kind][i] = c, 2
		return c
	}
	e.state[kind][i] = 1
	if e.k == 0 {
		c = e.self(nd, kind)
	}
	if nd.sat {
		c = costInf
	}
	c = satAdd(c, e.child(nd, kind))
	for _, t := range nd.inplace {
		c = satAdd(c, e.eval(t, kind))
	}
	for _, targets := range nd.dynamic {
		c = satAdd(c, e.maxEval(targets, kind))
	}
	e.cur[kind][i], e.state[kind][i] = c, 2
	return c
}

// self is what the node's own keywords count for at an instance node of
// kind (k = 0) in e's measure. In measureText an object's member names
// are its text: the propertyNames schemas' text per byte of a name is
// charged here, at the object, not at its children.
func (e *costEval) self(nd *costNode, kind int) uint64 {
	switch e.measure {
	case measureText:
		c := nd.text[kind]
		if kind == kindObject {
			for _, t := range nd.names {
				c = satAdd(c, e.eval(t, kindScalar))
			}
		}
		return c
	case measureUnique:
		if nd.unique && kind == kindArray {
			return 1
		}
		return 0
	case measureRegex:
		c := uint64(0)
		if nd.regex && kind == kindScalar {
			c = 1
		}
		if kind == kindObject {
			// propertyNames: {"format": "regex"} parses every member
			// name, counted at the object's depth (regexRanges), as
			// measureText counts the names' bytes (review 41).
			for _, t := range nd.names {
				c = satAdd(c, e.eval(t, kindScalar))
			}
		}
		return c
	case measureCompare:
		return nd.compare
	case measureNumeric:
		if kind == kindScalar {
			return nd.numeric
		}
		return 0
	}
	if kind == kindScalar {
		// The numeric keywords' own numbers, at each comparison.
		return satAdd(nd.self, nd.numericSelf)
	}
	return nd.self
}

// maxEval is the most of A_kind(t, k) over targets (one of them is
// evaluated).
func (e *costEval) maxEval(targets []int, kind int) uint64 {
	m := uint64(0)
	for _, t := range targets {
		m = max(m, e.eval(t, kind))
	}
	return m
}

// child is child_kind(nd, k): what one child of a node of that kind
// receives, k >= 1 (nothing at k = 0, nor below a scalar).
func (e *costEval) child(nd *costNode, kind int) uint64 {
	if e.k == 0 {
		return 0
	}
	switch kind {
	case kindObject:
		c := satAdd(satAdd(e.maxStar(nd.props), sumOf(e.star, nd.pattern)), sumOf(e.star, nd.unevalProps))
		if e.k == 1 && e.measure == measureEvals {
			c = satAdd(c, sumOf(e.scalar0, nd.names))
		}
		return c
	case kindArray:
		return satAdd(satAdd(e.maxStar(nd.items), e.maxStar(nd.items2020)), sumOf(e.star, nd.arrayAlways))
	}
	return 0
}

// maxStar is the most of A*(t, k-1) over list.
func (e *costEval) maxStar(list []int) uint64 {
	m := uint64(0)
	for _, t := range list {
		m = max(m, e.star[t])
	}
	return m
}

// sumOf is the (saturating) sum of level[t] over list.
func sumOf(level []uint64, list []int) uint64 {
	s := uint64(0)
	for _, t := range list {
		s = satAdd(s, level[t])
	}
	return s
}

// longestChain returns the most schemas one chain of in-place
// applicators (static or dynamic) evaluates at one instance node, costInf
// when the in-place graph has a cycle.
func longestChain(nodes []costNode) uint64 {
	memo := make([]uint64, len(nodes))
	state := make([]uint8, len(nodes))
	var walk func(i int) uint64
	walk = func(i int) uint64 {
		switch state[i] {
		case 1:
			return costInf
		case 2:
			return memo[i]
		}
		state[i] = 1
		m := uint64(0)
		for _, t := range nodes[i].group {
			m = max(m, walk(t))
		}
		if nodes[i].group != nil {
			memo[i], state[i] = m, 2
			return m
		}
		for _, t := range nodes[i].inplace {
			m = max(m, walk(t))
		}
		for _, targets := range nodes[i].dynamic {
			for _, t := range targets {
				m = max(m, walk(t))
			}
		}
		memo[i], state[i] = satAdd(m, 1), 2
		return memo[i]
	}
	longest := uint64(0)
	for i := range nodes {
		longest = max(longest, walk(i))
	}
	return longest
}

// cost returns the bound on the weighted evaluations of validating a value
// with counts[k] nodes at depth k: Σ counts[k] × perDepth[k] × weight[k],
// saturated.
func (t *costTable) cost(counts *[MaxDepth + 1]uint64) uint64 {
	c := uint64(0)
	for k, n := range counts {
		c = satAdd(c, satMul(satMul(n, t.perDepth[k]), t.weight[k]))
	}
	return c
}

// valueMeasure is what checkCost reads of a value, by depth k.
type valueMeasure struct {
	// nodes[k]: the nodes at depth k (every array, object and scalar
	// one node; member names are not nodes).
	nodes [MaxDepth + 1]uint64
	// text[k]: the bytes of the strings at depth k and of the member
	// names of the objects at depth k (what a pattern is matched against).
	text [MaxDepth + 1]uint64
	// uniqueAll[k]: over the arrays at depth k, items × their size
	// (uniqueSize): the library's uniqueItems compares every pair at
	// worst. uniqueHash[k]: over those of more than 20 items, their size:
	// what hashing the items costs, and what uniqueWork reads.
	uniqueAll, uniqueHash [MaxDepth + 1]uint64
	// numbers[k]: over the nodes at depth k, what the numbers in them
	// (the node and everything under it) cost a comparison beyond one
	// evaluation each: numberSize - 1, 0 for an ordinary number. An
	// "enum" member or "const" compared with the node converts each of
	// them at most once.
	numbers [MaxDepth + 1]uint64
	// scalars[k]: over the numbers at depth k, what each costs a
	// conversion or comparison beyond one evaluation (numberSize - 1):
	// the numeric keywords convert a number instance each time
	// (costTable.numeric).
	scalars [MaxDepth + 1]uint64
}

// uniqueBytesPerNode is how many bytes of a string or member name count
// as one node in a comparison of two values (Go compares them a word at
// a time; a number costs a math/big conversion).
const uniqueBytesPerNode = 64

// numberDigitsPerNode is how many decimal digits of a number's text, or
// of its decimal exponent, count as one node more in a comparison: the
// library compares two numbers as math/big rationals built from their
// text (fmt.Sprint, big.Rat.SetString: a power of ten as large as the
// exponent, then a gcd), 4 to 5 µs for a float64 near 1e-300 where an
// evaluation is 0.1 to 1.3 µs.
const numberDigitsPerNode = 32

// numberSize is the size of a number in a comparison (measureValue):
// 1, and 1 more per numberDigitsPerNode digits of its text and of its
// decimal exponent. A float64 is written in at most 17 significant
// digits, its decimal exponent about 0.30103 × its binary one (at most
// 324: size 11); an integer in at most 20 digits.
func numberSize(v any) uint64 {
	digits, exp := uint64(20), uint64(0)
	switch x := v.(type) {
	case float64:
		digits, exp = 17, float64Exp10(x)
	case float32:
		digits, exp = 9, float64Exp10(float64(x))
	case json.Number:
		t := string(x)
		digits = uint64(len(t))
		// With no digit before its exponent, math/big refuses the text
		// before reading the exponent ("SECRET" costs its bytes).
		if i := strings.IndexAny(t, "eE"); i >= 0 && strings.ContainsAny(t[:i], "0123456789") {
			e, err := strconv.ParseInt(strings.TrimPrefix(t[i+1:], "+"), 10, 32)
			if err != nil {
				e = math.MaxInt32 // not a number the library reads: the most
			}
			exp = uint64(max(e, -e))
		}
	}
	return satAdd(1, satAdd(digits, exp)/numberDigitsPerNode)
}

// float64Exp10 bounds the magnitude of f's decimal exponent (as fmt
// writes it) from its binary one.
func float64Exp10(f float64) uint64 {
	_, e2 := math.Frexp(f)
	return uint64(max(e2, -e2))*30103/100000 + 1
}

// measureValue adds v, at depth, to m and returns the size of v: 1 per
// node and 1 per uniqueBytesPerNode bytes of its strings and member
// names, a number numberSize, what one deep comparison of v costs at
// most. ok is false when v
// nests deeper than MaxDepth; the walk stops there, so a Go value that
// contains itself ends too.
func measureValue(v any, depth int, m *valueMeasure) (size uint64, ok bool) {
	size, _, ok = measureNode(v, depth, m)
	return size, ok
}

// measureNode is measureValue, also returning what the numbers of v cost
// a comparison beyond an evaluation each (valueMeasure.numbers).
func measureNode(v any, depth int, m *valueMeasure) (size, numbers uint64, ok bool) {
	if depth > MaxDepth {
		return 0, 0, false
	}
	m.nodes[depth]++
	size = 1
	switch x := v.(type) {
	case string:
		m.text[depth] += uint64(len(x))
		size += uint64(len(x)) / uniqueBytesPerNode
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		size = numberSize(x)
		numbers = size - 1
		m.scalars[depth] = satAdd(m.scalars[depth], numbers)
	case map[string]any:
		for name, c := range x {
			m.text[depth] += uint64(len(name))
			n, num, ok := measureNode(c, depth+1, m)
			if !ok {
				return 0, 0, false
			}
			size = satAdd(size, satAdd(n, 1+uint64(len(name))/uniqueBytesPerNode))
			numbers = satAdd(numbers, num)
		}
	case []any:
		for _, c := range x {
			n, num, ok := measureNode(c, depth+1, m)
			if !ok {
				return 0, 0, false
			}
			size = satAdd(size, n)
			numbers = satAdd(numbers, num)
		}
		m.uniqueAll[depth] = satAdd(m.uniqueAll[depth], satMul(uint64(len(x)), size))
		if len(x) > 20 {
			m.uniqueHash[depth] = satAdd(m.uniqueHash[depth], size)
		}
	}
	m.numbers[depth] = satAdd(m.numbers[depth], numbers)
	return size, numbers, true
}

// checkCost refuses v before the library validates it when its worst case
// is over MaxValidationCost or it nests deeper than MaxDepth. The worst
// case adds, to the weighted evaluations (costTable.cost), the regular
// expression matching (instructions × bytes of text, textPerEvaluation to
// an evaluation) and the node comparisons of "uniqueItems" (uniqueWork).
func (s *Schema) checkCost(v any) error {
	var m valueMeasure
	if _, ok := measureValue(v, 0, &m); !ok {
		return amp.Named(0, ErrNotJSONCompatible, "value is nested deeper than %d, outside the json data model", MaxDepth)
	}
	if s.cost == nil {
		return nil // the zero Schema: nothing to validate with
	}
	t := s.cost
	c := satAdd(t.cost(&m.nodes), weigh(&m.text, &t.text)/textPerEvaluation)
	if t.hasUnique && c <= MaxValidationCost {
		if all := satAdd(c, weigh(&m.uniqueAll, &t.unique)); all <= MaxValidationCost {
			c = all
		} else if c = satAdd(c, weigh(&m.uniqueHash, &t.unique)); c <= MaxValidationCost {
			// Every pair at worst is over: the pairs the library can
			// really compare, those its hash cannot tell apart.
			w, _ := t.uniqueWorkOf(v, 0)
			c = satAdd(c, w)
		}
	}
	if t.hasCompare {
		// Each "enum" member or "const" compared with a node converts its
		// numbers (the member's side is in the evaluations: keywordSelf).
		c = satAdd(c, weigh(&m.numbers, &t.compare))
	}
	if t.hasNumeric {
		// Each numeric keyword evaluated on a number converts it, or
		// compares or divides it (its own number is in the evaluations).
		c = satAdd(c, weigh(&m.scalars, &t.numeric))
	}
	if t.hasRegex && c <= MaxValidationCost {
		var ranges [MaxDepth + 1]uint64
		regexRanges(v, 0, &ranges)
		c = satAdd(c, weigh(&ranges, &t.regex))
	}
	if c > MaxValidationCost {
		// Never the value: only its size.
		return amp.Named(amp.CodeInvalidMessage, ErrValidationTooCostly,
			"validating this value could take more than %d schema evaluations (a recursive schema with several branches, long strings against large patterns, or many similar items that must be unique); it was not validated", MaxValidationCost)
	}
	return nil
}

// regexRanges adds to ranges[k] the parse ranges (patternParseRanges, at
// most MaxPatternRanges + 1: isBoundedRegex parses no string over it) of
// every string of v at depth k, and of the member names of the objects at
// depth k (propertyNames): what parsing it as a "format": "regex"
// costs, a range an evaluation (0.1 to 0.4 µs each, where an evaluation
// is 0.1 to 1.3 µs). "\pL\pL" is 6 bytes and 3,000 ranges (30 µs to
// parse): charged by its bytes only, a 1 MiB message of them took seconds.
func regexRanges(v any, depth int, ranges *[MaxDepth + 1]uint64) {
	switch x := v.(type) {
	case string:
		ranges[depth] = satAdd(ranges[depth], uint64(min(patternParseRanges(x), MaxPatternRanges+1)))
	case map[string]any:
		for name, e := range x {
			// A member name at the object's depth, as valueMeasure.text.
			ranges[depth] = satAdd(ranges[depth], uint64(min(patternParseRanges(name), MaxPatternRanges+1)))
			regexRanges(e, depth+1, ranges)
		}
	case []any:
		for _, e := range x {
			regexRanges(e, depth+1, ranges)
		}
	}
}

// weigh is Σ a[k] × b[k], saturated.
func weigh(a, b *[MaxDepth + 1]uint64) uint64 {
	c := uint64(0)
	for k := range a {
		c = satAdd(c, satMul(a[k], b[k]))
	}
	return c
}

// uniqueWorkOf returns Σ over the arrays in v (at depth) of uniqueWork
// times the evaluations of "uniqueItems" the array receives (t.unique),
// and the size of v (measureValue), in one pass.
func (t *costTable) uniqueWorkOf(v any, depth int) (work, size uint64) {
	size = 1
	switch x := v.(type) {
	case string:
		size += uint64(len(x)) / uniqueBytesPerNode
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		size = numberSize(x)
	case map[string]any:
		for name, e := range x {
			w, n := t.uniqueWorkOf(e, depth+1)
			work = satAdd(work, w)
			size = satAdd(size, satAdd(n, 1+uint64(len(name))/uniqueBytesPerNode))
		}
	case []any:
		sizes := make([]uint64, len(x))
		for i, e := range x {
			w, n := t.uniqueWorkOf(e, depth+1)
			work = satAdd(work, w)
			sizes[i] = n
			size = satAdd(size, n)
		}
		if t.unique[depth] > 0 {
			work = satAdd(work, satMul(uniqueWork(x, sizes, size-1), t.unique[depth]))
		}
	}
	return work, size
}

// uniqueWork bounds the node comparisons jsonschema v5.3.1's uniqueItems
// makes on arr, whose items have the given sizes (total in all): up to 20
// items, every pair; beyond, each item against the earlier ones of its
// hash bucket (the library's hash function). Its hash is not injective (a
// string is written without its length, a number without its sign), so
// distinct items can share a bucket; libraryHash writes exactly its
// bytes, so items it cannot tell apart share one here too. An item
// compared with m others costs at most m × its size; hashing it, its
// size (charged by checkCost before this runs: valueMeasure.uniqueHash).
func uniqueWork(arr []any, sizes []uint64, total uint64) uint64 {
	if len(arr) <= 20 {
		return satMul(uint64(len(arr)), total)
	}
	type bucket struct{ items, size uint64 }
	buckets := map[uint64]*bucket{}
	var h maphash.Hash
	for i, item := range arr {
		h.Reset()
		libraryHash(item, &h)
		k := h.Sum64()
		b := buckets[k]
		if b == nil {
			b = &bucket{}
			buckets[k] = b
		}
		b.items++
		b.size = satAdd(b.size, sizes[i])
	}
	c := total
	for _, b := range buckets {
		c = satAdd(c, satMul(b.items-1, b.size))
	}
	return c
}

// libraryHash writes what jsonschema v5.3.1's hash function writes for
// v, byte for byte, so that two values it puts in one bucket land in one
// here (up to a collision of the 64-bit hash, whose seed a peer does not
// know).
func libraryHash(v any, h *maphash.Hash) {
	switch v := v.(type) {
	case nil:
		h.WriteByte(0)
	case bool:
		h.WriteByte(1)
		if v {
			h.WriteByte(1)
		} else {
			h.WriteByte(0)
		}
	case json.Number, float32, float64, int, int8, int32, int64, uint, uint8, uint32, uint64:
		h.WriteByte(2)
		num, ok := new(big.Rat).SetString(fmt.Sprint(v))
		if ok {
			_, _ = h.Write(num.Num().Bytes())
			_, _ = h.Write(num.Denom().Bytes())
		}
	case string:
		h.WriteByte(3)
		_, _ = h.WriteString(v)
	case []any:
		h.WriteByte(4)
		for _, item := range v {
			libraryHash(item, h)
		}
	case map[string]any:
		h.WriteByte(5)
		for _, prop := range slices.Sorted(maps.Keys(v)) {
			libraryHash(prop, h)
			libraryHash(v[prop], h)
		}
	}
}

// dynamicAnchorTargets compiles, with the compiler c that compiled the
// schema, every object of the loaded documents that has a string
// "$dynamicAnchor": the library resolves a $dynamicRef to such a schema
// of a resource in its dynamic scope, even one no applicator leads to
// ("$defs"). ok is false when one of them did not compile, or when their
// pointers were too long to record: the targets are then not all known.
// Each document is parsed once, through parsed.
func dynamicAnchorTargets(c *jsonschema.Compiler, docs map[string][]byte, parsed *parsedDocs) (out []*jsonschema.Schema, ok bool) {
	ok = true
	done := map[string]bool{}
	for {
		// Compiling a target can load a further document: until none is new.
		var keys []string
		for key := range docs {
			if !done[key] {
				keys = append(keys, key)
			}
		}
		if len(keys) == 0 {
			return out, ok
		}
		sort.Strings(keys)
		for _, key := range keys {
			done[key] = true
			data := docs[key]
			if !mayNameKeyword(data, "$dynamicAnchor") {
				continue
			}
			ptrs, all := dynamicAnchorPointers(parsed.get(key, data))
			if !all {
				ok = false
			}
			for _, p := range ptrs {
				sch, err := c.Compile(artifactURL(key) + "#" + p)
				if err != nil {
					ok = false
					continue
				}
				out = append(out, sch)
			}
		}
	}
}

// mayNameKeyword reports whether the JSON text data may hold a member
// named kw: it holds kw quoted, or a "\u" escape (a name can be spelled
// with escapes, "\u0024dynamicAnchor", which a plain search would miss).
func mayNameKeyword(data []byte, kw string) bool {
	return bytes.Contains(data, []byte(`"`+kw+`"`)) || bytes.Contains(data, []byte(`\u`))
}

// maxDynamicAnchorPointerBytes bounds the pointer text one
// dynamicAnchorPointers records, in all: a document of many
// "$dynamicAnchor" objects under one long member name would otherwise
// cost the name's length for each (schemagraph.MaxIndexPointerBytes, the
// same bound for the same walk).
const maxDynamicAnchorPointerBytes = schemagraph.MaxIndexPointerBytes

// dynamicAnchorPointers returns the JSON pointers (URI fragment form) of
// every object in v that has a string "$dynamicAnchor", in the order of a
// depth-first walk with members in name order. It keeps a stack of
// escaped tokens and builds a pointer only for an object it records, so
// its time and memory are linear in v; all is false when the pointers
// passed maxDynamicAnchorPointerBytes, the rest then left out (the caller
// counts the targets as not all known).
func dynamicAnchorPointers(v any) (ptrs []string, all bool) {
	w := anchorPointerWalk{all: true}
	w.walk(v)
	return w.ptrs, w.all
}

// anchorPointerWalk is the state of one dynamicAnchorPointers.
type anchorPointerWalk struct {
	path schemagraph.PointerStack // fragment-escaped, as the pointers are
	ptrs []string
	all  bool
}

func (w *anchorPointerWalk) walk(v any) {
	switch x := v.(type) {
	case map[string]any:
		if _, isString := x["$dynamicAnchor"].(string); isString && w.all {
			if p, ok := w.path.Render(maxDynamicAnchorPointerBytes); ok {
				w.ptrs = append(w.ptrs, p)
			} else {
				w.all = false
			}
		}
		// Only the members that hold objects or arrays are sorted.
		var keys []string
		for k, c := range x {
			if isContainer(c) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			w.path.Push(fragmentToken(k))
			w.walk(x[k])
			w.path.Pop()
		}
	case []any:
		for i, c := range x {
			if isContainer(c) {
				w.path.Push(strconv.Itoa(i))
				w.walk(c)
				w.path.Pop()
			}
		}
	}
}

// isContainer reports whether v is an object or an array (what a walk
// for subschemas descends into).
func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// fragmentToken escapes a member name as a JSON pointer token in a URI
// fragment (RFC 6901 §6).
func fragmentToken(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	return url.PathEscape(s)
}
