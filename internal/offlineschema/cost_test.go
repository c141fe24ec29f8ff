package offlineschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// branchingRecursion recurses through "properties" with two branches: the
// library evaluates 2^d subschemas for a value nested d deep.
const branchingRecursion = `{"properties":{"a":{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}}}`

// anyOfChain returns a schema of n levels of anyOf: [$ref next, $ref next]
// ending in {"type":"integer"}: 2^n evaluations for one string.
func anyOfChain(n int) string {
	defs := make([]string, 0, n+1)
	for i := 0; i < n; i++ {
		defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"integer"}`, n))
	return `{"$ref":"#/$defs/l0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// nestA returns {"a":{"a":...{"a":leaf}}}, depth objects deep.
func nestA(depth int, leaf any) any {
	v := leaf
	for i := 0; i < depth; i++ {
		v = map[string]any{"a": v}
	}
	return v
}

// compileCounting compiles doc as "s.json" and counts the library's runs.
func compileCounting(t testing.TB, doc string) (*Schema, *int) {
	t.Helper()
	s, err := Compile(newLoader(map[string]string{"s.json": doc}), "s.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	runs := new(int)
	s.onLibrary = func() { *runs++ }
	return s, runs
}

func TestValidationOfADeepValueAgainstBranchingRecursionIsRefusedBeforeItRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		value  any
	}{
		// A caller's value nested 40 deep: 2^40 evaluations.
		{"properties and anyOf, 40 deep", branchingRecursion, nestA(40, "secret-value")},
		// One string against a 1.4 KB schema: the blow-up is the
		// schema's (2^22 evaluations; 16 levels, 2^18, are let through:
		// no more than the largest ordinary value costs).
		{"20 levels of anyOf, one string", anyOfChain(20), "secret-value"},
		{"30 levels of anyOf, one string", anyOfChain(30), "secret-value"},
		// Recursion through array items and oneOf.
		{"items and oneOf, 40 deep", `{"items":{"oneOf":[{"$ref":"#"},{"$ref":"#"}]}}`, nestArray(40)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, runs := compileCounting(t, tc.schema)
			err := s.Validate(tc.value)
			ampErr(t, err, ErrValidationTooCostly, amp.CodeInvalidMessage)
			if *runs != 0 {
				t.Fatalf("the library ran %d times on a value over the budget", *runs)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the refusal echoes the value: %v", err)
			}
			if errors.Is(err, ErrSchemaViolation) {
				t.Error("a value that was not validated is reported as invalid")
			}
		})
	}
	// The same schema still validates shallow values (valid and invalid).
	s, runs := compileCounting(t, branchingRecursion)
	if err := s.Validate(nestA(3, 1)); err != nil {
		t.Fatalf("shallow value refused: %v", err)
	}
	if *runs != 1 {
		t.Fatalf("library runs = %d, want 1", *runs)
	}
	chain, _ := compileCounting(t, anyOfChain(8))
	ampErr(t, chain.Validate("x"), ErrSchemaViolation, amp.CodeSchemaViolation)
}

// nestArray returns [[[...[1]...]]], depth arrays deep.
func nestArray(depth int) any {
	var v any = 1
	for i := 0; i < depth; i++ {
		v = []any{v}
	}
	return v
}

// maxMessageNesting is the nesting amp.DefaultLimits accepts in a message.
const maxMessageNesting = 32

// wideDepth is how deep the largest values (DefaultMaxItems items) of
// ordinary schemas must never be refused: an array of records of arrays.
const wideDepth = 3

// neverRefused fails unless every value of at most DefaultMaxItems nodes
// nested at most wideDepth is within the budget for s: the largest
// weighted per-node bound times the most nodes (at most 16 a node).
func neverRefused(t *testing.T, name string, s *Schema) {
	t.Helper()
	worst := uint64(0)
	for k := 0; k <= wideDepth; k++ {
		worst = max(worst, satMul(s.cost.perDepth[k], s.cost.weight[k]))
	}
	if c := satMul(worst, DefaultMaxItems); c > MaxValidationCost {
		t.Errorf("%s: a value the agent accepts could be refused: %d weighted evaluations a node, %d in all", name, worst, c)
	}
}

// dirLoader serves the files under a directory by relative slash path,
// "$id"s indexed like a resolver would.
func dirLoader(t *testing.T, root string) (*memLoader, []string) {
	t.Helper()
	files := map[string]string{}
	var schemas []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		files[rel] = string(b)
		if strings.HasSuffix(rel, ".schema.json") || strings.HasPrefix(rel, "schemas/") {
			schemas = append(schemas, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return newLoader(files), schemas
}

func TestValidationBudgetNeverRefusesOrdinarySchemas(t *testing.T) {
	// The sample bundles' schemas.
	for _, b := range []string{"translate", "geo"} {
		l, schemas := dirLoader(t, filepath.Join("..", "..", "testdata", "bundles", b))
		if len(schemas) == 0 {
			t.Fatalf("no schemas in bundle %s", b)
		}
		for _, key := range schemas {
			s, err := Compile(l, key, Options{})
			if err != nil {
				t.Fatalf("%s/%s: %v", b, key, err)
			}
			neverRefused(t, b+"/"+key, s)
		}
	}
	// Both sides of every pair of the compatibility corpus.
	pairs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "compat", "*.json"))
	if err != nil || len(pairs) == 0 {
		t.Fatalf("no compatibility corpus: %v", err)
	}
	for _, p := range pairs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var pair map[string]json.RawMessage
		if err := json.Unmarshal(data, &pair); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, side := range []string{"old", "new"} {
			var docs map[string]json.RawMessage
			if err := json.Unmarshal(pair[side], &docs); err != nil || docs["schema.json"] == nil {
				continue
			}
			files := map[string]string{}
			for k, v := range docs {
				files[k] = string(v)
			}
			s, err := Compile(newLoader(files), "schema.json", Options{})
			if err != nil {
				continue // the corpus also holds schemas the compiler refuses
			}
			neverRefused(t, filepath.Base(p)+" "+side, s)
		}
	}
	// Recursive schemas with one recursive branch a level, with the
	// largest values the agent accepts of their shape.
	// Three items each ({}, "name", []), as ValueFromCBORBudget counts.
	wide := make([]any, 0, DefaultMaxItems/3-1)
	for range DefaultMaxItems/3 - 1 {
		wide = append(wide, map[string]any{"name": "n", "children": []any{}})
	}
	for _, tc := range []struct {
		name, schema string
		value        any
	}{
		{"linked list", `{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}}}`, nestNext(maxMessageNesting)},
		{"tree through items", `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`,
			map[string]any{"name": "root", "children": wide}},
		{"json value by type", `{"anyOf":[{"type":["string","number","boolean","null"]},{"type":"array","items":{"$ref":"#"}},{"type":"object","additionalProperties":{"$ref":"#"}}]}`,
			nestArray(maxMessageNesting)},
		{"expression tree, one object branch", `{"oneOf":[{"type":"number"},{"type":"object","required":["op","args"],"properties":{"op":{"enum":["+","*"]},"args":{"type":"array","items":{"$ref":"#"}}}}]}`,
			nestExpr(maxMessageNesting / 2)},
		{"$dynamicRef tree", `{"$id":"https://example.org/tree","$dynamicAnchor":"node","type":"object","properties":{"data":true,"children":{"type":"array","items":{"$dynamicRef":"#node"}}},"$defs":{"strict":{"$id":"https://example.org/strict-tree","$dynamicAnchor":"node","$ref":"tree","unevaluatedProperties":false}}}`,
			map[string]any{"children": []any{map[string]any{"children": []any{}}}}},
		{"$recursiveRef tree", `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"type":"object","properties":{"children":{"type":"array","items":{"$recursiveRef":"#"}}}}`,
			map[string]any{"children": []any{map[string]any{"children": []any{}}}}},
		{"propertyNames and patternProperties", `{"type":"object","propertyNames":{"maxLength":20},"patternProperties":{"^x":{"$ref":"#"},"^y":{"type":"string"}}}`,
			nestX(maxMessageNesting)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, runs := compileCounting(t, tc.schema)
			neverRefused(t, tc.name, s)
			if err := s.Validate(tc.value); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if *runs != 1 {
				t.Fatalf("library runs = %d, want 1", *runs)
			}
		})
	}
}

func nestNext(depth int) any {
	v := map[string]any{"v": 1}
	for i := 1; i < depth; i++ {
		v = map[string]any{"v": i, "next": v}
	}
	return v
}

func nestExpr(depth int) any {
	var v any = 1.5
	for i := 1; i < depth; i++ {
		v = map[string]any{"op": "+", "args": []any{v, 2}}
	}
	return v
}

func nestX(depth int) any {
	v := map[string]any{"y": "s"}
	for i := 1; i < depth; i++ {
		v = map[string]any{"x": v, "y": "s"}
	}
	return v
}

// A value nested deeper than the data model is refused before the library
// (a Go value that contains itself would otherwise never end).
func TestValidationOfAValueDeeperThanTheModelIsRefused(t *testing.T) {
	s, runs := compileCounting(t, `{}`)
	ampErr(t, s.Validate(nestArray(MaxDepth+1)), ErrNotJSONCompatible, 0)
	loop := map[string]any{}
	loop["self"] = loop
	ampErr(t, s.Validate(loop), ErrNotJSONCompatible, 0)
	if *runs != 0 {
		t.Fatalf("library runs = %d, want 0", *runs)
	}
	if err := s.Validate(nestArray(MaxDepth)); err != nil {
		t.Fatalf("depth %d refused: %v", MaxDepth, err)
	}
}

// The bound of the known blow-ups is their closed form: not below what the
// library does (an attacker's schema must not be under-counted), not far
// above it.
func TestValidationCostBoundsTheKnownBlowUps(t *testing.T) {
	// anyOfChain(n) on a scalar: level i costs 1 + 2·(1 + level i+1),
	// the last 1, so with the root 2^(n+2) - 2 evaluations: exactly what
	// the library does for a string, which fails every branch.
	for _, n := range []int{1, 4, 10} {
		s, _ := compileCounting(t, anyOfChain(n))
		want := uint64(4<<n) - 2
		if got := s.cost.perDepth[0]; got != want {
			t.Errorf("anyOfChain(%d): bound %d, want %d", n, got, want)
		}
	}
	// branchingRecursion: a node k deep receives 5·2^(k-1) evaluations.
	s, _ := compileCounting(t, branchingRecursion)
	for k := 1; k < 20; k++ {
		if got, want := s.cost.perDepth[k], uint64(5)<<(k-1); got != want {
			t.Errorf("depth %d: bound %d, want %d", k, got, want)
		}
	}
}

// The lowest depth at which nestA is refused against branchingRecursion:
// the budget lets realistic depths through.
func TestBranchingRecursionIsRefusedOnlyWhenDeep(t *testing.T) {
	s, _ := compileCounting(t, branchingRecursion)
	refusedAt := -1
	for d := 0; d <= MaxDepth; d++ {
		if err := s.cost.cost(shapeOf(t, nestA(d, 1))); err > MaxValidationCost {
			refusedAt = d
			break
		}
	}
	if refusedAt < 15 || refusedAt > 25 {
		t.Fatalf("refused from depth %d, want about 20", refusedAt)
	}
}

func shapeOf(t *testing.T, v any) *[MaxDepth + 1]uint64 {
	t.Helper()
	var counts [MaxDepth + 1]uint64
	if !shape(v, 0, &counts) {
		t.Fatal("too deep")
	}
	return &counts
}

// BenchmarkValidationBudget validates, for a few shapes, the deepest value
// within MaxValidationCost and reports its bound (units), the time of one
// unit (ns/unit) and of a validation at the budget (ms@budget):
//
//	go test ./internal/offlineschema/ -run '^$' -bench ValidationBudget -benchtime 3x
func BenchmarkValidationBudget(b *testing.B) {
	failing := `{"type":"object","properties":{"a":{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}}}`
	wide := make([]any, 0, DefaultMaxItems/3-1)
	for range DefaultMaxItems/3 - 1 {
		wide = append(wide, map[string]any{"name": "n", "children": []any{}})
	}
	for _, bc := range []struct {
		name, schema string
		value        func(d int) any
	}{
		{"branching recursion, valid", branchingRecursion, func(d int) any { return nestA(d, 1) }},
		{"branching recursion, invalid leaf", failing, func(d int) any { return nestA(d, 1) }},
		{"anyOf chain, one string", "", nil},
		{"ordinary tree, largest value", `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`,
			func(int) any { return map[string]any{"name": "root", "children": wide} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var s *Schema
			var v any
			var cost uint64
			if bc.value == nil { // the longest chain within the budget
				for n := 1; ; n++ {
					next, _ := compileCounting(b, anyOfChain(n))
					one := [MaxDepth + 1]uint64{1}
					if next.cost.cost(&one) > MaxValidationCost {
						break
					}
					s, v, cost = next, "x", next.cost.cost(&one)
				}
			} else {
				s, _ = compileCounting(b, bc.schema)
				for d := 0; d <= MaxDepth; d++ {
					var counts [MaxDepth + 1]uint64
					shape(bc.value(d), 0, &counts)
					c := s.cost.cost(&counts)
					if c > MaxValidationCost || (v != nil && c == cost) {
						break
					}
					v, cost = bc.value(d), c
				}
			}
			b.ResetTimer()
			for range b.N {
				if err := s.Validate(v); errors.Is(err, ErrValidationTooCostly) {
					b.Fatal(err)
				}
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(per/float64(cost), "ns/unit")
			b.ReportMetric(float64(cost), "units")
			b.ReportMetric(per/float64(cost)*MaxValidationCost/1e6, "ms@budget")
		})
	}
}

// Each "enum" member is compared with the value: a large enum applied to
// every item of a large array is refused before it runs; a realistic one
// (250 codes) is not.
func TestValidationOfManyItemsAgainstAHugeEnumIsRefusedBeforeItRuns(t *testing.T) {
	enum := func(n int) string {
		members := make([]string, n)
		for i := range members {
			members[i] = fmt.Sprintf(`"code-%d"`, i)
		}
		return `{"type":"array","items":{"enum":[` + strings.Join(members, ",") + `]}}`
	}
	items := make([]any, 10000)
	for i := range items {
		items[i] = "not-a-code"
	}
	huge, runs := compileCounting(t, enum(20000))
	ampErr(t, huge.Validate(items), ErrValidationTooCostly, amp.CodeInvalidMessage)
	if *runs != 0 {
		t.Fatalf("library runs = %d, want 0", *runs)
	}
	codes, runs := compileCounting(t, enum(250))
	ampErr(t, codes.Validate(items), ErrSchemaViolation, amp.CodeSchemaViolation)
	if *runs != 1 {
		t.Fatalf("library runs = %d, want 1", *runs)
	}
}

// A $dynamicRef resolves at run time to a schema of a resource in scope,
// even one in "$defs" that no applicator leads to: the bound counts it.
func TestDynamicRefIntoDefsIsCountedBeforeItRuns(t *testing.T) {
	l := newLoader(map[string]string{
		"base.json": `{"$id":"https://example.org/base","$dynamicAnchor":"n","properties":{"a":{"$dynamicRef":"#n"}}}`,
		"ext.json":  `{"$id":"https://example.org/ext","$ref":"https://example.org/base","$defs":{"x":{"$dynamicAnchor":"n","anyOf":[{"$ref":"https://example.org/base"},{"$ref":"https://example.org/base"}]}}}`,
	})
	s, err := Compile(l, "ext.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	s.onLibrary = func() { runs++ }
	ampErr(t, s.Validate(nestA(40, 1)), ErrValidationTooCostly, amp.CodeInvalidMessage)
	if runs != 0 {
		t.Fatalf("library runs = %d, want 0", runs)
	}
	if err := s.Validate(nestA(4, 1)); err != nil {
		t.Fatalf("shallow value refused: %v", err)
	}
}

// shape adds to counts the nodes of v at each depth (valueMeasure.nodes);
// ok is false when v nests deeper than MaxDepth.
func shape(v any, depth int, counts *[MaxDepth + 1]uint64) (ok bool) {
	var m valueMeasure
	_, ok = measureValue(v, depth, &m)
	for k, n := range m.nodes {
		counts[k] += n
	}
	return ok
}
