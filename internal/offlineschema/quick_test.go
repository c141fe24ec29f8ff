package offlineschema

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// quickCase is one bundle checked both ways: files added to a QuickCheck
// and every key checked, against Compile of the same key.
type quickCase struct {
	name  string
	files map[string]string
	key   string // the key whose verdicts are compared
	// vouched: the quick pass must accept key without compiling it.
	vouched bool
	// err: the verdict of Compile (and so of Check); "" = accepted.
	err amp.ErrName
}

const qk = "capabilities/q/1.0.0/input.schema.json"

func quickFiles(root string, more ...string) map[string]string {
	files := map[string]string{qk: root}
	for i := 0; i+1 < len(more); i += 2 {
		files[more[i]] = more[i+1]
	}
	return files
}

func quickCases() []quickCase {
	common := `{"$id": "https://schemas.example.org/common.json", "$defs": {"lang": {"type": "string", "minLength": 2}, "named": {"$anchor": "lang", "type": "string"}}}`
	return []quickCase{
		// What the quick pass vouches for without compiling.
		{name: "plain object schema", files: quickFiles(`{"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$", "format": "email"}}, "required": ["a"], "additionalProperties": false}`), key: qk, vouched: true},
		{name: "ref by $id", files: quickFiles(`{"properties": {"l": {"$ref": "https://schemas.example.org/common.json"}}}`, "schemas/common.json", common), key: qk, vouched: true},
		{name: "ref by relative path with pointer", files: quickFiles(`{"$ref": "../../../schemas/common.json#/$defs/lang"}`, "schemas/common.json", common), key: qk, vouched: true},
		{name: "ref by $id to an anchor", files: quickFiles(`{"$ref": "https://schemas.example.org/common.json#lang"}`, "schemas/common.json", common), key: qk, vouched: true},
		{name: "local pointer and recursion through items", files: quickFiles(`{"$defs": {"n": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/n"}, "kids": {"type": "array", "items": {"$ref": "#"}}}}`), key: qk, vouched: true},
		{name: "draft-07 with items array and dependencies", files: quickFiles(`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}}, "items": [{"$ref": "#/definitions/s"}], "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`), key: qk, vouched: true},
		{name: "relative ref under an absolute $id, with a pointer", files: quickFiles(`{"$id": "https://schemas.example.org/q.json", "$ref": "common.json#/$defs/lang"}`, "schemas/common.json", common), key: qk, vouched: true},

		// Refused: the quick pass sees the problem, Compile names it.
		{name: "ref to the network", files: quickFiles(`{"$ref": "https://json.schemastore.org/package.json"}`), key: qk, err: ErrUnresolvedRef},
		{name: "ref to the file system", files: quickFiles(`{"properties": {"a": {"$ref": "file:///etc/hostname"}}}`), key: qk, err: ErrUnresolvedRef},
		{name: "ref to a missing artifact", files: quickFiles(`{"$ref": "missing.json"}`), key: qk, err: ErrUnresolvedRef},
		{name: "dangling local pointer", files: quickFiles(`{"properties": {"a": {"$ref": "#/$defs/nope"}}}`), key: qk, err: ErrUnresolvedRef},
		{name: "dangling pointer into another artifact", files: quickFiles(`{"$ref": "../../../schemas/common.json#/$defs/nope"}`, "schemas/common.json", common), key: qk, err: ErrUnresolvedRef},
		{name: "missing anchor", files: quickFiles(`{"$ref": "https://schemas.example.org/common.json#nope"}`, "schemas/common.json", common), key: qk, err: ErrUnresolvedRef},
		{name: "remote $schema", files: quickFiles(`{"$schema": "https://evil.example.org/meta.json", "type": "string"}`), key: qk, err: ErrUnresolvedRef},
		{name: "unknown type name", files: quickFiles(`{"properties": {"a": {"type": "no-such-type"}}}`), key: qk, err: ErrInvalidSchema},
		{name: "negative minLength", files: quickFiles(`{"minLength": -1}`), key: qk, err: ErrInvalidSchema},
		{name: "pattern Go cannot compile", files: quickFiles(`{"pattern": "(?=a)"}`), key: qk, err: ErrInvalidSchema},
		{name: "keyword value of the wrong type deep inside", files: quickFiles(`{"additionalProperties": {"items": {"$comment": 5}}}`), key: qk, err: ErrInvalidSchema},
		{name: "unimplemented format", files: quickFiles(`{"format": "credit-card"}`), key: qk, err: ErrInvalidSchema},
		{name: "pointer into a non-schema location", files: quickFiles(`{"$ref": "#/enum/0", "enum": [{"$ref": "https://evil.example.org/x"}]}`), key: qk, err: ErrUnresolvedRef},

		// Compiled because the quick pass does not cover the construct;
		// Compile accepts.
		{name: "$dynamicRef is compiled", files: quickFiles(`{"$dynamicAnchor": "n", "properties": {"a": {"$dynamicRef": "#n"}}}`), key: qk},
		{name: "draft 2019-09 is compiled", files: quickFiles(`{"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "string"}`), key: qk},
		// The library compiles only what is reachable from the root, so
		// an unreachable bad $ref is accepted by Compile too.
		{name: "a referenced artifact the quick pass cannot vouch for", files: quickFiles(`{"$ref": "../../../schemas/common.json#/$defs/lang"}`, "schemas/common.json", `{"$defs": {"lang": {"type": "string"}, "bad": {"$ref": "https://evil.example.org/x"}}}`), key: qk},
		{name: "percent-encoded ref is compiled", files: quickFiles(`{"$ref": "a%20b.json"}`, "capabilities/q/1.0.0/a b.json", `{"type": "string"}`), key: qk},

		// Loops: a $ref naming a schema that applies another $ref to the
		// same instance is compiled, and the library decides.
		{name: "ref loop at the root", files: quickFiles(`{"$ref": "#"}`), key: qk, err: ErrInvalidSchema},
		{name: "ref loop through $defs", files: quickFiles(`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`), key: qk, err: ErrInvalidSchema},
		{name: "ref loop through anchors", files: quickFiles(`{"$defs": {"a": {"$anchor": "a", "not": {"$ref": "#b"}}, "b": {"$anchor": "b", "$ref": "#a"}}, "$ref": "#a"}`), key: qk, err: ErrInvalidSchema},
		{name: "ref loop across documents, which Compile accepts", files: quickFiles(`{"$ref": "../../../schemas/b.json"}`, "schemas/b.json", `{"allOf": [{"$ref": "../capabilities/q/1.0.0/input.schema.json"}]}`), key: qk},
		{name: "alias chain without a loop is compiled", files: quickFiles(`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`), key: qk},
		{name: "recursion through properties is not a loop", files: quickFiles(`{"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"}`), key: qk, vouched: true},
	}
}

// TestQuickCheckNeverVouchesForWhatCompileRefuses: the quick check (the
// threat: a bundle built or imported with a schema that references the
// network, the file system or nothing, loops, or does not compile) gives
// Compile's verdict on every case, and vouches without compiling for the
// common shapes.
func TestQuickCheckNeverVouchesForWhatCompileRefuses(t *testing.T) {
	for _, tt := range quickCases() {
		t.Run(tt.name, func(t *testing.T) {
			l := newLoader(tt.files)
			q := NewQuickCheck()
			for _, k := range slices.Sorted(maps.Keys(tt.files)) {
				if _, err := q.Add(k, []byte(tt.files[k])); err != nil {
					t.Fatalf("Add(%s): %v", k, err)
				}
			}
			_, cerr := Compile(l, tt.key, Options{})
			if tt.err == "" {
				if cerr != nil {
					t.Fatalf("Compile refused: %v", cerr)
				}
			} else {
				ampErr(t, cerr, tt.err, 0)
			}
			var loadsBefore = len(l.loads)
			qerr := q.Check(l, tt.key, Options{})
			why := q.NeedsCompile(tt.key)
			switch {
			case tt.vouched:
				if qerr != nil || why != "" {
					t.Fatalf("not vouched for: %v (%s)", qerr, why)
				}
			case tt.err == "":
				if qerr != nil || why == "" {
					t.Fatalf("want compiled and accepted, got %v (%q)", qerr, why)
				}
			default:
				if why == "" {
					t.Fatal("vouched for a schema Compile refuses")
				}
				got := ampErr(t, qerr, tt.err, 0)
				if want := amp.AsError(cerr); got.Message != want.Message {
					t.Fatalf("message %q, want Compile's %q", got.Message, want.Message)
				}
			}
			if tt.vouched && len(l.loads) != loadsBefore && !strings.Contains(tt.name, "pointer") {
				t.Fatalf("vouching loaded %v", l.loads[loadsBefore:])
			}
		})
	}
}

// TestQuickCheckAgreesOnTheCompileSuite: every document of the Compile
// test bundle gets Compile's verdict from Check, except where the quick
// pass vouches (then Compile must accept).
func TestQuickCheckAgreesOnTheCompileSuite(t *testing.T) {
	l := newLoader(bundleFiles)
	q := NewQuickCheck()
	added := 0
	for _, k := range slices.Sorted(maps.Keys(bundleFiles)) {
		if _, err := q.Add(k, []byte(bundleFiles[k])); err == nil {
			added++
		}
	}
	if added < 5 {
		t.Fatalf("only %d documents added", added)
	}
	for _, k := range slices.Sorted(maps.Keys(bundleFiles)) {
		if q.NeedsCompile(k) == "not added" {
			continue
		}
		_, cerr := Compile(l, k, Options{})
		qerr := q.Check(l, k, Options{})
		if (cerr == nil) != (qerr == nil) || (cerr != nil && amp.AsError(cerr).Message != amp.AsError(qerr).Message) {
			t.Errorf("%s: Compile %v, quick check %v (%s)", k, cerr, qerr, q.NeedsCompile(k))
		}
	}
}

// TestQuickCheckAddRefusesWhatSchemaIDRefuses: Add reports a document
// that is not a JSON object, or whose $id is not a string, with
// SchemaID's error, and returns SchemaID's $id otherwise.
func TestQuickCheckAddRefusesWhatSchemaIDRefuses(t *testing.T) {
	for i, doc := range []string{`{"type": `, `[]`, `null`, `true`, `{"$id": 5}`, `{"$schema": "http://json-schema.org/draft-04/schema#", "id": "urn:x"}`, `{"$id": "https://a.example/x.json#frag"}`, `{"$id": "rel.json"}`} {
		q := NewQuickCheck()
		id, qerr := q.Add(fmt.Sprintf("schemas/%d.json", i), []byte(doc))
		want, werr := SchemaID([]byte(doc))
		if id != want || (qerr == nil) != (werr == nil) {
			t.Errorf("%s: Add gave %q, %v; SchemaID %q, %v", doc, id, qerr, want, werr)
		}
		if werr != nil && !errors.Is(qerr, ErrInvalidSchema) {
			t.Errorf("%s: %v is not invalid_schema", doc, qerr)
		}
	}
}

// TestQuickCheckSameIDTwiceIsCompiled: when documents declare one $id,
// which one a loader serves is the loader's choice, so neither document,
// nor one referencing that $id, is vouched for (threat: the pass checking
// a pointer in one document while the compiler reads the other).
func TestQuickCheckSameIDTwiceIsCompiled(t *testing.T) {
	q := NewQuickCheck()
	for _, k := range []string{"schemas/a.json", "schemas/b.json", "schemas/c.json"} {
		if _, err := q.Add(k, []byte(`{"$id": "https://a.example/x.json", "properties": {"p": {"type": "string"}}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Add("schemas/ref.json", []byte(`{"$ref": "https://a.example/x.json#/properties/p"}`)); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"schemas/a.json": `{}`, "schemas/b.json": `{}`, "schemas/c.json": `{}`, "schemas/ref.json": `{}`}
	q.Check(newLoader(files), "schemas/ref.json", Options{})
	for _, k := range slices.Sorted(maps.Keys(files)) {
		if q.NeedsCompile(k) == "" {
			t.Errorf("%s was vouched for", k)
		}
	}
	if _, err := q.Add("schemas/a.json", []byte(`{}`)); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("a key added twice: %v", err)
	}
}

// TestQuickCheckBoundsTheReferencesItKeeps: references are kept once each
// until every $id is known, and a document with more than maxQuickRefs
// distinct ones is left to Compile (threat: a source of schemas made of
// distinct references holding the builder's memory until the end).
func TestQuickCheckBoundsTheReferencesItKeeps(t *testing.T) {
	doc := func(n int, distinct bool) []byte {
		var b strings.Builder
		b.WriteString(`{"properties": {`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			frag := "x"
			if distinct {
				frag = fmt.Sprintf("x%d", i)
			}
			fmt.Fprintf(&b, `"p%d": {"$ref": "https://schemas.example.com/common.json#/$defs/%s"}`, i, frag)
		}
		b.WriteString(`}}`)
		return []byte(b.String())
	}
	q := NewQuickCheck()
	if _, err := q.Add("schemas/same.json", doc(maxQuickRefs+1, false)); err != nil {
		t.Fatal(err)
	}
	if got := len(q.docs["schemas/same.json"].refs); got != 1 || q.NeedsCompile("schemas/same.json") != "" {
		t.Fatalf("%d references kept for one repeated reference (%s)", got, q.NeedsCompile("schemas/same.json"))
	}
	if _, err := q.Add("schemas/distinct.json", doc(maxQuickRefs+1, true)); err != nil {
		t.Fatal(err)
	}
	if q.NeedsCompile("schemas/distinct.json") == "" || len(q.docs["schemas/distinct.json"].refs) != 0 {
		t.Fatal("a document with too many distinct references was kept for the quick pass")
	}
}
