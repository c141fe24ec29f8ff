package offlineschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// booleanProperties returns {"items": {"properties": {...}}} with n
// members whose subschemas are the boolean true: three objects in all.
func booleanProperties(n int) string {
	var b strings.Builder
	b.WriteString(`{"items": {"properties": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%x": true`, i)
	}
	b.WriteString(`}}}`)
	return b.String()
}

// TestBooleanSubschemasEscapeTheCompileObjectLimit: the compile limit
// counted JSON objects only, but the library compiles a boolean subschema
// like any other, and its compile time grows with the square of all of
// them (each compile lists the resources of its document): 16,000
// "p": true properties (188 KB, three objects) took 19 s to compile on a
// loaded 2-core machine, 200,000 (2.5 MB, within 4 MiB) more than ten
// minutes, at build, import and in the agent alike. Expected: true and
// false count against MaxCompileObjects as objects do, refused by Compile
// and the quick check alike before the library reads the document, and
// just under the limit it still compiles.
func TestBooleanSubschemasEscapeTheCompileObjectLimit(t *testing.T) {
	over := booleanProperties(MaxCompileObjects - 2) // and three objects
	cerr, _ := sameVerdict(t, quickFiles(over), qk)
	if cerr == nil {
		t.Fatal("a schema of 10,001 subschemas, all but three of them booleans, compiled")
	}
	e := ampErr(t, cerr, ErrInvalidSchema, 0)
	var ol *overLimit
	if !strings.Contains(e.Message, "over a compile limit") || !errors.As(cerr, &ol) {
		t.Fatalf("refused, but not for a limit: %v", cerr)
	}
	if cerr, _ := sameVerdict(t, quickFiles(booleanProperties(MaxCompileObjects/10)), qk); cerr != nil {
		t.Fatalf("1,000 boolean subschemas: %v", cerr)
	}
}

// TestBooleanFlagsAreNoSubschemas: counting every true and false (the
// first form of SCHEMA-8) refused ordinary schemas that compiled in under
// a second, and with them installed bundles at their next use: 4,000
// properties {"type": "string", "readOnly": true, "deprecated": false}
// hold 12,001 objects and literals. The value of a flag keyword
// (readOnly, deprecated, …) in a schema object is no subschema and is not
// counted; in a map of subschemas (properties, $defs, …) a member named
// readOnly is a subschema like any other, and counts: 1,500 properties
// maps of the seven flag names as true subschemas (3,001 objects, 10,500
// boolean subschemas) stay refused.
func TestBooleanFlagsAreNoSubschemas(t *testing.T) {
	var ok strings.Builder
	ok.WriteString(`{"type": "object", "properties": {`)
	for i := range 4000 {
		if i > 0 {
			ok.WriteString(",")
		}
		fmt.Fprintf(&ok, `"p%d": {"type": "string", "readOnly": true, "deprecated": false}`, i)
	}
	ok.WriteString(`}}`)
	if cerr, _ := sameVerdict(t, quickFiles(ok.String()), qk); cerr != nil {
		t.Fatalf("4,000 properties flagged readOnly and deprecated: %v", cerr)
	}
	var flags []string
	for k := range flagKeywords {
		flags = append(flags, fmt.Sprintf(`%q: true`, k))
	}
	var over strings.Builder
	over.WriteString(`{"properties": {`)
	for i := range 1500 {
		if i > 0 {
			over.WriteString(",")
		}
		fmt.Fprintf(&over, `"p%d": {"properties": {%s}}`, i, strings.Join(flags, ", "))
	}
	over.WriteString(`}}`)
	cerr, _ := sameVerdict(t, quickFiles(over.String()), qk)
	if cerr == nil {
		t.Fatal("10,500 boolean subschemas named as flag keywords in properties maps were not counted")
	}
	if e := ampErr(t, cerr, ErrInvalidSchema, 0); !strings.Contains(e.Message, "over a compile limit") {
		t.Fatalf("refused, but not for a limit: %v", cerr)
	}
}
