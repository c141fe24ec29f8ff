package offlineschema

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// sameVerdict adds files to a QuickCheck, checks key both ways and
// asserts that the quick check gives Compile's verdict (nil, or the same
// name and message) and vouches only for what Compile accepts. It returns
// Compile's error and whether the quick pass vouched.
func sameVerdict(t *testing.T, files map[string]string, key string) (error, bool) {
	t.Helper()
	l := newLoader(files)
	q := NewQuickCheck()
	for _, k := range slices.Sorted(maps.Keys(files)) {
		q.Add(k, []byte(files[k])) // errors are SchemaID's; Check compiles such a document
	}
	_, cerr := Compile(l, key, Options{})
	qerr := q.Check(l, key, Options{})
	vouched := q.NeedsCompile(key) == ""
	switch {
	case vouched && cerr != nil:
		t.Fatalf("the quick check vouched for a schema Compile refuses: %v", cerr)
	case (qerr == nil) != (cerr == nil):
		t.Fatalf("quick check %v, Compile %v", qerr, cerr)
	case cerr != nil:
		if got, want := amp.AsError(qerr), amp.AsError(cerr); got.Name != want.Name || got.Message != want.Message {
			t.Fatalf("quick check %s %q, Compile %s %q", got.Name, got.Message, want.Name, want.Message)
		}
	}
	return cerr, vouched
}

// TestQuickCheckRefusesSchemeLessMetaSchemaLikeTheCompiler: the quick
// check read "$schema" without its scheme, so it vouched for
// "json-schema.org/draft/2020-12/schema", which the library refuses
// ("$schema must be uri"): a bundle carrying it built, imported and
// passed check, and its first invocation failed (issue 29, item 7). Every
// spelling here gets Compile's verdict from the quick check, and the
// library's exact spellings of 2020-12 and draft-07 are still vouched for
// without compiling.
func TestQuickCheckRefusesSchemeLessMetaSchemaLikeTheCompiler(t *testing.T) {
	for _, tt := range []struct {
		schema  string
		err     amp.ErrName // Compile's verdict ("" = accepted)
		vouched bool
	}{
		{"https://json-schema.org/draft/2020-12/schema", "", true},
		{"http://json-schema.org/draft/2020-12/schema", "", true},
		{"https://json-schema.org/draft/2020-12/schema#", "", true},
		{"http://json-schema.org/draft/2020-12/schema#/", "", true},
		{"https://json-schema.org/draft/2020-12/schema#x#", "", true}, // cut at the first "#", as the library does
		{"https://json-schema.org/schema", "", true},                  // the library's "latest": 2020-12
		{"http://json-schema.org/draft-07/schema#", "", true},
		{"https://json-schema.org/draft-07/schema", "", true},
		{"https://json-schema.org/draft/2019-09/schema", "", false},
		{"http://json-schema.org/draft-04/schema#", "", false},

		{"json-schema.org/draft/2020-12/schema", ErrInvalidSchema, false}, // the finding
		{"json-schema.org/draft/2020-12/schema#", ErrInvalidSchema, false},
		{"json-schema.org/draft-07/schema#", ErrInvalidSchema, false},
		{"//json-schema.org/draft/2020-12/schema", ErrInvalidSchema, false},
		{"", ErrInvalidSchema, false},
		{" https://json-schema.org/draft/2020-12/schema", ErrInvalidSchema, false},
		{"HTTP://json-schema.org/draft/2020-12/schema", ErrUnresolvedRef, false},
		{"https://JSON-SCHEMA.ORG/draft/2020-12/schema", ErrUnresolvedRef, false},
		{"https://json-schema.org/draft/2020-12/schema?", ErrUnresolvedRef, false},
		{"https://json-schema.org/draft/2020-12/schema#/$defs", ErrUnresolvedRef, false},
		{"https://json-schema.org/draft/2020-12/schema/", ErrUnresolvedRef, false},
		{"urn:example:meta", ErrUnresolvedRef, false},
	} {
		t.Run(tt.schema, func(t *testing.T) {
			doc := fmt.Sprintf(`{"$schema": %q, "type": "object", "properties": {"a": {"type": "string"}}}`, tt.schema)
			cerr, vouched := sameVerdict(t, quickFiles(doc), qk)
			if tt.err == "" {
				if cerr != nil {
					t.Fatalf("Compile refused: %v", cerr)
				}
			} else {
				ampErr(t, cerr, tt.err, 0)
			}
			if vouched != tt.vouched {
				t.Fatalf("vouched %v, want %v", vouched, tt.vouched)
			}
		})
	}
}

// properties returns an object schema of n string properties, each with
// the given extra keywords.
func properties(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`{"type": "object", "properties": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"p%d": {"type": "string"%s}`, i, extra)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestCompileBoundRefusesAHugeSchema: a schema over one of the compile
// limits (threat: one compile that takes minutes, the library's time
// growing with the square of the subschemas, or gigabytes, through many
// large regular expressions or huge numbers) is refused, invalid_schema,
// by Compile and by the quick check alike, before the library compiles
// it; the same shape just under the limit compiles.
func TestCompileBoundRefusesAHugeSchema(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"not": `, n) + `{}` + strings.Repeat(`}`, n) }
	for _, tt := range []struct {
		name       string
		over, fits string
	}{
		// Objects: the root, "properties", one per property (the
		// quadratic shape; just under the limit it compiles in seconds),
		// or in an enum, which the library does not compile.
		{"subschemas", properties(MaxCompileObjects-1, ""), properties(MaxCompileObjects/10, "")},
		{"objects", `{"enum": [{}` + strings.Repeat(`, {}`, MaxCompileObjects-1) + `]}`, `{"enum": [{}` + strings.Repeat(`, {}`, MaxCompileObjects-2) + `]}`},
		{"bytes", `{"description": "` + strings.Repeat("x", MaxCompileBytes) + `"}`, `{"description": "` + strings.Repeat("x", MaxCompileBytes-20) + `"}`},
		{"nesting", deep(MaxSchemaNesting), deep(MaxSchemaNesting - 1)},
		{"pattern instructions", properties(MaxCompilePatternInsts/1000+1, `, "pattern": "^a{999}$"`), properties(MaxCompilePatternInsts/1000-1, `, "pattern": "^a{999}$"`)},
		{"a huge exponent", `{"maximum": 1e999999}`, `{"maximum": 1e400}`},
		{"a tiny exponent", `{"multipleOf": 1e-999999}`, `{"multipleOf": 1e-400}`},
		{"a long number", `{"const": 1` + strings.Repeat("0", maxNumberLen) + `}`, `{"const": 1` + strings.Repeat("0", maxNumberLen-1) + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cerr, _ := sameVerdict(t, quickFiles(tt.over), qk)
			e := ampErr(t, cerr, ErrInvalidSchema, 0)
			var ol *overLimit
			if !strings.Contains(e.Message, "over a compile limit") || !errors.As(cerr, &ol) {
				t.Fatalf("refused, but not for a limit: %v", cerr)
			}
			if cerr, _ := sameVerdict(t, quickFiles(tt.fits), qk); cerr != nil {
				t.Fatalf("just under the limit: %v", cerr)
			}
		})
	}
}

// TestCompileBoundCountsEveryDocumentItLoads: the limits hold for all the
// documents of one compile together, each counted as often as the library
// loads it (once per URI), so a schema cannot spread its cost over shared
// documents; the quick check adds them up the same way.
func TestCompileBoundCountsEveryDocumentItLoads(t *testing.T) {
	text := strings.Repeat("x", MaxCompileBytes/3)
	shared := `{"$id": "https://schemas.example.org/big.json", "description": "` + text + `", "$defs": {"d": {"type": "string"}}}`
	for _, tt := range []struct {
		name string
		root string
		over bool
	}{
		{"two documents", `{"$ref": "../../../schemas/big.json#/$defs/d"}`, false},
		{"three documents", `{"$ref": "../../../schemas/big.json#/$defs/d", "allOf": [{"$ref": "../../../schemas/other.json"}]}`, true},
		// The library loads big.json once by its key's URL and once by
		// its $id: it holds it twice.
		{"two documents, one by two uris", `{"$ref": "../../../schemas/big.json#/$defs/d", "allOf": [{"$ref": "https://schemas.example.org/big.json#/$defs/d"}]}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := quickFiles(strings.TrimSuffix(tt.root, "}")+`, "description": "`+text+`"}`, "schemas/big.json", shared,
				"schemas/other.json", strings.Replace(shared, "big.json", "other.json", 1))
			cerr, _ := sameVerdict(t, files, qk)
			if !tt.over {
				if cerr != nil {
					t.Fatalf("Compile refused: %v", cerr)
				}
				return
			}
			var ol *overLimit
			if ampErr(t, cerr, ErrInvalidSchema, 0); !errors.As(cerr, &ol) {
				t.Fatalf("refused, but not for a limit: %v", cerr)
			}
		})
	}
}

// TestCompileBoundCountsNothingInsideStrings: braces, brackets and numbers
// inside strings (descriptions, escaped quotes) are text, not objects,
// nesting or numbers: a valid schema is not refused for its prose.
func TestCompileBoundCountsNothingInsideStrings(t *testing.T) {
	prose := strings.Repeat(`{[ \"1e999999\" {{ \\`, MaxSchemaNesting+1)
	doc := `{"description": "` + prose + `", "enum": ["` + strings.Repeat("{", MaxCompileObjects+1) + `", 1e300, -0.5e-300]}`
	if objects, why := scanSchemaJSON([]byte(doc)); objects != 1 || why != "" {
		t.Fatalf("scan: %d objects, %q", objects, why)
	}
	if cerr, vouched := sameVerdict(t, quickFiles(doc), qk); cerr != nil || !vouched {
		t.Fatalf("Compile %v, vouched %v", cerr, vouched)
	}
}

// TestCompileLimitMessagesMatchTheConstants: the refusal messages name
// the limits in numbers; they must be the constants' values.
func TestCompileLimitMessagesMatchTheConstants(t *testing.T) {
	for _, tt := range []struct {
		c    compileCost
		want string
	}{
		{compileCost{bytes: MaxCompileBytes + 1}, fmt.Sprintf("%d MiB", MaxCompileBytes>>20)},
		{compileCost{objects: MaxCompileObjects + 1}, fmt.Sprintf("%d,%03d", MaxCompileObjects/1000, MaxCompileObjects%1000)},
		{compileCost{insts: MaxCompilePatternInsts + 1}, fmt.Sprintf("%d,%03d", MaxCompilePatternInsts/1000, MaxCompilePatternInsts%1000)},
	} {
		if got := tt.c.over(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q does not say %s", tt.c, got, tt.want)
		}
	}
	if _, why := scanSchemaJSON([]byte(strings.Repeat("[", MaxSchemaNesting+1))); !strings.Contains(why, strconv.Itoa(MaxSchemaNesting)) {
		t.Errorf("nesting: %q", why)
	}
	if _, why := scanSchemaJSON([]byte("1e999")); !strings.Contains(why, strconv.Itoa(maxNumberLen)) || !strings.Contains(why, strconv.Itoa(maxExponent)) {
		t.Errorf("number: %q", why)
	}
}
