package offlineschema

import (
	"bytes"
	"strconv"

	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// Limits of one Compile: what the documents it loads (the root and every
// document its references reach, counted once per URI the library loads
// them by) may hold together. The library's compile time grows with the
// square of the number of subschemas, its memory with the bytes and with
// the compiled regular expressions; beyond a limit Compile refuses the
// schema (invalid_schema) before the library sees the document that went
// over, and QuickCheck vouches for no schema that goes over one
// (docs/FORMAT.md §6).
const (
	// MaxCompileBytes caps the bytes of the documents of one compile.
	MaxCompileBytes = 4 << 20
	// MaxCompileObjects caps the JSON objects and the literals true and
	// false (every subschema is one or the other) in the documents of one
	// compile: the library's compile time grows with the square of its
	// subschemas, boolean ones included (docs/SPEC-DECISIONS.md SCHEMA-8).
	MaxCompileObjects = 10000
	// MaxCompilePatternInsts caps the instructions of the compiled
	// programs of every "pattern" and "patternProperties" regular
	// expression in the documents of one compile, each occurrence counted
	// ("a{1000}" is about 1,000); each one on its own is capped at
	// MaxPatternInsts (pattern.go).
	MaxCompilePatternInsts = 200000
	// MaxCompilePatternRanges caps the character-class ranges compiling
	// those regular expressions builds beyond their instructions (their
	// parse and Go's one-pass copy, MaxPatternRanges each), each
	// occurrence counted: 24 to 48 MB and about 0.2 s.
	MaxCompilePatternRanges = 2000000
	// MaxSchemaNesting caps the nesting of arrays and objects in one
	// schema document. Numbers in a schema document obey the value
	// model's caps: at most 100 bytes and a decimal exponent within ±400
	// (the library turns each into a math/big rational).
	MaxSchemaNesting = 128
)

// compileCost is what one loaded document adds to a compile.
type compileCost struct {
	bytes, objects, insts int
	// largest is the instructions of the largest single pattern.
	largest int
	// ranges: the patterns' PatternCost.Ranges, each occurrence counted;
	// largestRanges the most of one pattern.
	ranges, largestRanges int
}

func (c compileCost) plus(d compileCost) compileCost {
	return compileCost{c.bytes + d.bytes, c.objects + d.objects, c.insts + d.insts, max(c.largest, d.largest),
		c.ranges + d.ranges, max(c.largestRanges, d.largestRanges)}
}

// over names the first limit c exceeds, "" when none, checking them in
// the order below.
func (c compileCost) over() string {
	for _, l := range [...]struct {
		n, max int
		why    string
	}{
		{c.bytes, MaxCompileBytes, overBytes},
		{c.objects, MaxCompileObjects, "more than 10,000 json objects and boolean subschemas in all"},
		{c.largest, MaxPatternInsts, "a regular expression of more than 10,000 instructions"},
		{c.largestRanges, MaxPatternRanges, "a regular expression whose character classes cost more than 200,000 ranges to compile"},
		{c.insts, MaxCompilePatternInsts, "more than 200,000 regular expression instructions in all"},
		{c.ranges, MaxCompilePatternRanges, "regular expressions whose character classes cost more than 2,000,000 ranges to compile in all"},
	} {
		if l.n > l.max {
			return l.why
		}
	}
	return ""
}

// scanSchemaJSON reads the bytes of one valid JSON document once and
// returns its number of objects and of true and false literals that may
// be subschemas (an upper bound of what the library compiles: objects and
// literals in data are counted too), or why it is over a per-document
// limit (nesting, a number's length or exponent). The one literal not
// counted is the value of a keyword whose value is a boolean flag in
// every draft (readOnly, deprecated, uniqueItems, …: flagKeywords) in an
// object that is not a map of subschemas (the value of properties,
// $defs, …: mapKeywords), where a member so named is a subschema
// (docs/SPEC-DECISIONS.md SCHEMA-8, amended).
func scanSchemaJSON(data []byte) (objects int, why string) {
	// maps[d]: the container open at depth d+1 is an object whose members
	// are subschemas (or an array: true too, its elements may be).
	var maps []bool
	var key, last string // the member name whose value comes next; the last string read
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			start := i + 1
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			last = string(data[start:min(i, len(data))])
			continue // a member's name: its ':' comes next
		case c == ':':
			key = last
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '{' || c == '[':
			if c == '{' {
				objects++
			}
			maps = append(maps, c == '[' || mapKeywords[key])
			if len(maps) > MaxSchemaNesting {
				return objects, "a document nested more than 128 deep"
			}
		case c == 't' || c == 'f':
			// true or false: outside strings, in valid JSON, nothing else
			// starts with these letters.
			if !flagKeywords[key] || len(maps) == 0 || maps[len(maps)-1] {
				objects++
			}
		case c == '}' || c == ']':
			if len(maps) > 0 {
				maps = maps[:len(maps)-1]
			}
		case c == '-' || ('0' <= c && c <= '9'):
			j := i
			for j < len(data) && numberByte(data[j]) {
				j++
			}
			if !schemaNumberOK(data[i:j]) {
				return objects, "a number longer than 100 bytes or with an exponent beyond 400"
			}
			i = j - 1
		}
		key = "" // after a value or any structural character but ':'
	}
	return objects, ""
}

// flagKeywords are the keywords whose value is a boolean flag, never a
// subschema, in every draft the library reads: annotations and
// assertions (draft-04's exclusive bounds were booleans) and 2019-09's
// $recursiveAnchor.
var flagKeywords = map[string]bool{
	"readOnly": true, "writeOnly": true, "deprecated": true, "uniqueItems": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "$recursiveAnchor": true,
}

// mapKeywords are the keywords whose value is an object of subschemas by
// name, in any draft: a member there named as a flag keyword is a
// subschema.
var mapKeywords = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
	"dependentSchemas": true, "dependencies": true,
}

// numberByte reports whether c can be part of a JSON number literal.
func numberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// schemaNumberOK reports whether a JSON number literal is within the
// value model's caps (maxNumberLen, maxExponent).
func schemaNumberOK(n []byte) bool {
	if len(n) > maxNumberLen {
		return false
	}
	if i := bytes.IndexAny(n, "eE"); i >= 0 {
		e, err := strconv.Atoi(string(n[i+1:]))
		return err == nil && -maxExponent <= e && e <= maxExponent
	}
	return true
}

// patternCost returns MeasurePattern of p (a pattern that does not parse
// costs what was measured: Compile refuses the schema then anyway), once
// per distinct pattern. It builds no program over MaxPatternInsts and
// parses none over MaxPatternRanges: such a pattern costs its text.
func patternCost(p string, cache map[string]PatternCost) PatternCost {
	n, ok := cache[p]
	if !ok {
		n, _ = MeasurePattern(p)
		cache[p] = n
	}
	return n
}

// treePatternInsts adds to c the cost (patternCost) of every string value
// of a "pattern" member and every member name of a "patternProperties"
// object, anywhere in a parsed document (also where they are not
// keywords: the count is an upper bound of what the library compiles),
// and the largest of them. Once c is over a limit it measures no more:
// the document is refused, and measuring builds programs.
func treePatternInsts(v any, cache map[string]PatternCost, c *compileCost) {
	add := func(p string) {
		if c.over() != "" {
			return
		}
		n := patternCost(p, cache)
		c.insts += n.Insts
		c.largest = max(c.largest, n.Insts)
		c.ranges += n.Ranges
		c.largestRanges = max(c.largestRanges, n.Ranges)
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "pattern":
				if p, ok := x.(string); ok {
					add(p)
				}
			case "patternProperties":
				if obj, ok := x.(map[string]any); ok {
					for p := range obj {
						add(p)
					}
				}
			}
			treePatternInsts(x, cache, c)
		}
	case []any:
		for _, x := range v {
			treePatternInsts(x, cache, c)
		}
	}
}

// measureSchema returns what the valid JSON document data adds to a
// compile, or why it is over a limit on its own. tree returns data parsed
// (called only when data is within the other limits).
func measureSchema(data []byte, tree func() any, cache map[string]PatternCost) (compileCost, string) {
	objects, why := scanSchemaJSON(data)
	if why != "" {
		return compileCost{}, why
	}
	c := compileCost{bytes: len(data), objects: objects}
	if why := c.over(); why != "" {
		return c, why
	}
	treePatternInsts(tree(), cache, &c)
	return c, c.over()
}

// parseForMeasure parses a valid JSON document as the library does
// (numbers kept as text).
func parseForMeasure(data []byte) any {
	v, _ := schemagraph.Parse(data, schemagraph.Options{MaxBytes: max(len(data), 1), MaxDepth: 10000, EncodingJSON: true}) // valid JSON: checked by the caller
	return v
}

// overLimit is the cause of an invalid_schema error for a compile over a
// limit.
type overLimit struct {
	key string
	why string
}

func (o *overLimit) Error() string {
	return "offlineschema: loading artifact " + o.key + " puts the compile over a limit: " + o.why
}
