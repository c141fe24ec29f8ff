package compat

import (
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// instanceGen draws random JSON instances from pools of names and values
// taken from the schemas under test, with a seeded generator.
type instanceGen struct {
	r      *rand.Rand
	names  []string
	values []any
}

func newInstanceGen(seed uint64, docs ...map[string]json.RawMessage) *instanceGen {
	g := &instanceGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	names := map[string]bool{"z": true, "x-a": true}
	g.values = []any{nil, true, false, "", "a", "ab", "abcdefghijklmnop", "x-1", "en", "2024-01-01",
		json.Number("-1"), json.Number("0"), json.Number("1"), json.Number("2"), json.Number("3"),
		json.Number("4"), json.Number("1.5"), json.Number("10"), json.Number("100")}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch k {
				case "properties", "patternProperties":
					if m, ok := e.(map[string]any); ok {
						for n := range m {
							names[n] = true
						}
					}
				case "required":
					if l, ok := e.([]any); ok {
						for _, n := range l {
							if s, ok := n.(string); ok {
								names[s] = true
							}
						}
					}
				case "const":
					g.values = append(g.values, e)
				case "enum":
					if l, ok := e.([]any); ok {
						g.values = append(g.values, l...)
					}
				case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
					g.values = append(g.values, e)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, d := range docs {
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, err := parseJSON(d[k])
			if err == nil {
				walk(v)
			}
		}
	}
	for n := range names {
		g.names = append(g.names, n)
	}
	sort.Strings(g.names)
	return g
}

func (g *instanceGen) value(depth int) any {
	k := g.r.IntN(10)
	if depth <= 0 || k < 5 {
		return g.values[g.r.IntN(len(g.values))]
	}
	if k < 8 {
		m := map[string]any{}
		for i := g.r.IntN(len(g.names) + 1); i > 0; i-- {
			m[g.names[g.r.IntN(len(g.names))]] = g.value(depth - 1)
		}
		return m
	}
	a := []any{}
	for i := g.r.IntN(4); i > 0; i-- {
		a = append(a, g.value(depth-1))
	}
	return a
}

// compiled compiles the root schema of one side with the offline compiler.
func compiled(t *testing.T, files map[string]json.RawMessage) *offlineschema.Schema {
	t.Helper()
	s, err := offlineschema.Compile(loaderOf(files), "schema.json", offlineschema.Options{})
	if err != nil {
		return nil
	}
	return s
}

func validUnder(t *testing.T, s *offlineschema.Schema, inst any) bool {
	t.Helper()
	b, err := json.Marshal(inst)
	if err != nil {
		t.Fatal(err)
	}
	v, err := offlineschema.ValueFromJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v) == nil
}

// soundness checks that whenever Subsumes says compatible, every random
// instance valid under the producer is valid under the acceptor. It
// returns how many producer-valid instances were tried.
func soundness(t *testing.T, label string, producer, acceptor map[string]json.RawMessage, seed uint64, n int) int {
	t.Helper()
	r := Subsumes(NewSource(loaderOf(producer)), "schema.json", NewSource(loaderOf(acceptor)), "schema.json")
	if r.Verdict != Compatible {
		return 0
	}
	ps, as := compiled(t, producer), compiled(t, acceptor)
	if ps == nil || as == nil {
		t.Errorf("%s: compatible, but a side does not compile offline", label)
		return 0
	}
	g := newInstanceGen(seed, producer, acceptor)
	tried := 0
	for i := 0; i < n; i++ {
		inst := g.value(3)
		if !validUnder(t, ps, inst) {
			continue
		}
		tried++
		if !validUnder(t, as, inst) {
			b, _ := json.Marshal(inst)
			t.Errorf("%s: checker said compatible, but %s is valid for the producer and refused by the acceptor", label, b)
			return tried
		}
	}
	return tried
}

// TestCompatibleVerdictNeverLosesAnInstance is the property test over the
// corpus: for every pair the checker calls compatible (either direction),
// random instances valid for one side are valid for the other.
func TestCompatibleVerdictNeverLosesAnInstance(t *testing.T) {
	vs := readVectors(t)
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	total := 0
	for i, name := range names {
		v := vs[name]
		total += soundness(t, name+" backward", v.Old, v.New, uint64(i)+1, 400)
		total += soundness(t, name+" forward", v.New, v.Old, uint64(i)+1000, 400)
	}
	if total < 1000 {
		t.Fatalf("only %d producer-valid instances were drawn: the property test is too weak", total)
	}
}

// schemaGen draws random small schemas and mutations of them.
type schemaGen struct{ r *rand.Rand }

func (g schemaGen) leaf() map[string]any {
	switch g.r.IntN(7) {
	case 0:
		return map[string]any{"type": "string"}
	case 1:
		return map[string]any{"type": "string", "maxLength": json.Number(strconv.Itoa(1 + g.r.IntN(3)))}
	case 2:
		return map[string]any{"type": "integer", "minimum": json.Number(strconv.Itoa(g.r.IntN(3)))}
	case 3:
		return map[string]any{"type": []any{"integer", "null"}}
	case 4:
		return map[string]any{"enum": []any{"en", "a", json.Number("1")}[:1+g.r.IntN(3)]}
	case 5:
		return map[string]any{"type": "number", "maximum": json.Number(strconv.Itoa(1 + g.r.IntN(4)))}
	default:
		return map[string]any{}
	}
}

func (g schemaGen) object(depth int) map[string]any {
	props := map[string]any{}
	var req []any
	for _, n := range []string{"a", "b", "c"} {
		if g.r.IntN(3) == 0 {
			continue
		}
		if depth > 0 && g.r.IntN(4) == 0 {
			props[n] = g.object(depth - 1)
		} else {
			props[n] = g.leaf()
		}
		if g.r.IntN(2) == 0 {
			req = append(req, n)
		}
	}
	m := map[string]any{"type": "object", "properties": props}
	if req != nil {
		m["required"] = req
	}
	switch g.r.IntN(4) {
	case 0:
		m["additionalProperties"] = false
	case 1:
		m["additionalProperties"] = g.leaf()
	}
	return m
}

func (g schemaGen) schema() any {
	switch g.r.IntN(5) {
	case 0:
		return map[string]any{"anyOf": []any{g.object(1), g.leaf()}}
	case 1:
		return map[string]any{"allOf": []any{g.object(1), map[string]any{"required": []any{"a"}}}}
	case 2:
		return map[string]any{"type": "array", "items": g.object(0), "maxItems": json.Number("3")}
	default:
		return g.object(2)
	}
}

// TestCompatibleVerdictSoundOnRandomSchemas draws random schema pairs
// (seeded) and checks the same property: no compatible verdict loses an
// instance.
func TestCompatibleVerdictSoundOnRandomSchemas(t *testing.T) {
	g := schemaGen{r: rand.New(rand.NewPCG(42, 7))}
	compatibles, tried := 0, 0
	for i := 0; i < 300; i++ {
		a, _ := json.Marshal(g.schema())
		b, _ := json.Marshal(g.schema())
		if i%3 == 0 {
			b = a // identical pairs must be compatible
		}
		pa := map[string]json.RawMessage{"schema.json": a}
		pb := map[string]json.RawMessage{"schema.json": b}
		if i%3 == 0 {
			r := Subsumes(NewSource(loaderOf(pa)), "schema.json", NewSource(loaderOf(pb)), "schema.json")
			if r.Verdict != Compatible {
				t.Errorf("pair %d: identical schemas are %s: %+v (%s)", i, r.Verdict, r.Findings, a)
			}
		}
		n := soundness(t, "random pair "+strconv.Itoa(i), pa, pb, uint64(i)+7, 200)
		if n > 0 {
			compatibles++
			tried += n
		}
	}
	if compatibles < 50 || tried < 2000 {
		t.Fatalf("only %d compatible pairs with %d instances: the property test is too weak", compatibles, tried)
	}
}
