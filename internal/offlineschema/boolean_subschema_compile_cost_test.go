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
