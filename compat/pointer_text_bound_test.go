package compat

import (
	"fmt"
	"strings"
	"testing"
)

// longNamePair is two schema documents, a.json and b.json, that differ
// only in a description under one member named nameLen bytes long,
// above leaves empty subschemas: every leaf is compared, and each was
// named by a pointer holding the long name.
func longNamePair(nameLen, leaves int) memLoader {
	name := strings.Repeat("n", nameLen)
	var ps []string
	for i := range leaves {
		ps = append(ps, fmt.Sprintf(`"p%d":{}`, i))
	}
	doc := func(d string) []byte {
		return []byte(`{"type":"object","properties":{"` + name + `":{"description":"` + d + `","properties":{` + strings.Join(ps, ",") + `}}}}`)
	}
	return memLoader{files: map[string][]byte{"a.json": doc("a"), "b.json": doc("b")}}
}

// nestedIDPair is two documents like longNamePair's, the leaves under
// depth levels each with its own relative "$id" of idLen bytes, reached
// by "items" (via "items") or by a member of "properties" that also
// holds an "$id" string (via "properties": a member, not a subschema,
// which the validator and node.child pass over): every leaf's base is
// the levels' "$id"s resolved each against the one above, about idLen
// bytes a level.
func nestedIDPair(depth, idLen, leaves int, via string) memLoader {
	seg := strings.Repeat("d", idLen) + "/"
	var ps []string
	for i := range leaves {
		ps = append(ps, fmt.Sprintf(`"p%d":{}`, i))
	}
	open, closing := `"items":`, "}"
	if via == "properties" {
		open, closing = `"properties":{"$id":"urn:x:","p":`, "}}"
	}
	doc := func(d string) []byte {
		var sb strings.Builder
		sb.WriteString(`{"type":"array","items":`)
		for range depth {
			sb.WriteString(`{"$id":"` + seg + `",` + open)
		}
		sb.WriteString(`{"description":"` + d + `","properties":{` + strings.Join(ps, ",") + `}}`)
		sb.WriteString(strings.Repeat(closing, depth) + "}")
		return []byte(sb.String())
	}
	return memLoader{files: map[string][]byte{"a.json": doc("a"), "b.json": doc("b")}}
}

// manyIDsUnderLongBase is two documents whose leaves, ids of them, each
// have an "$id" of their own under a base of about 2,000 bytes (two
// nested relative "$id"s): resolving each reads the base once.
func manyIDsUnderLongBase(ids int) memLoader {
	var ps []string
	for i := range ids {
		ps = append(ps, fmt.Sprintf(`"p%d":{"$id":"i%d"}`, i, i))
	}
	doc := func(d string) []byte {
		return []byte(`{"type":"array","items":{"$id":"` + strings.Repeat("d", 1000) + `/","items":{"$id":"` + strings.Repeat("e", 950) + `/","description":"` + d + `","properties":{` + strings.Join(ps, ",") + `}}}}`)
	}
	return memLoader{files: map[string][]byte{"a.json": doc("a"), "b.json": doc("b")}}
}

// TestSchemaWhoseLongMemberNameSitsAboveManySubschemasIsNotCompared: the
// checker names each subschema it compares by its JSON pointer, built
// anew at each comparison and kept in the memo's key. A 1 MB member name
// above 2,000 empty subschemas (two 1 MB documents the offline compiler
// accepts) allocated 22 GB and held 3.8 GB in the memo for one check;
// 10,000 subschemas about 19 GB. A document holding a pointer or an
// "$id" past MaxPointerBytes is now not compared (unreadable_schema,
// Unknown) before any comparison; one within it is compared as before.
// COMPAT-14 amended: so is one whose nested relative "$id"s resolve,
// each against the one above, to a base past 2 × MaxPointerBytes. A
// chain of 100 levels of 1,000-byte "$id"s above 2,000 leaves (a 123 KB
// pair the offline compiler accepts) made bases of 100 KB and allocated
// 905 MB, 394 MB held in the checker's node numbers (checker.ids). The
// walk that finds it resolves each "$id" once, reading its base: past
// maxResolveBytes of bases and "$id"s read (2,200 "$id"s under a
// 2,000-byte base) the document is not compared either.
func TestSchemaWhoseLongMemberNameSitsAboveManySubschemasIsNotCompared(t *testing.T) {
	longID := memLoader{files: map[string][]byte{
		"a.json": []byte(`{"$id":"urn:x:` + strings.Repeat("i", 2000) + `","type":"object"}`),
		"b.json": []byte(`{"type":"object"}`),
	}}
	for _, tc := range []struct {
		name  string
		l     memLoader
		want  Verdict
		steps bool
	}{
		{"a 2,000-byte member name", longNamePair(2000, 200), Unknown, false},
		{"a 100,000-byte member name", longNamePair(100000, 200), Unknown, false},
		{"a 2,000-byte $id", longID, Unknown, false},
		{"100 nested relative $ids of 1,000 bytes", nestedIDPair(100, 1000, 200, "items"), Unknown, false},
		{"3 nested relative $ids of 1,000 bytes", nestedIDPair(3, 1000, 200, "items"), Unknown, false},
		{"nested relative $ids under properties holding an $id member", nestedIDPair(3, 1000, 200, "properties"), Unknown, false},
		{"2,200 $ids under a 2,000-byte base", manyIDsUnderLongBase(2200), Unknown, false},
		{"a 100-byte member name", longNamePair(100, 200), Compatible, true},
		{"1,000 $ids under a 2,000-byte base", manyIDsUnderLongBase(1000), Compatible, true},
		{"one relative $id of 1,000 bytes", nestedIDPair(1, 1000, 200, "items"), Compatible, true},
		{"100 nested relative $ids of 10 bytes", nestedIDPair(100, 10, 200, "items"), Compatible, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := NewSource(tc.l)
			c := &checker{a: src.s, b: src.s, memo: map[string]int{}, assumed: maxInt}
			r := c.run("a.json", "b.json")
			if r.Verdict != tc.want || (c.steps > 0) != tc.steps {
				t.Fatalf("%s: %s after %d steps %+v; want %s, steps taken %v", tc.name, r.Verdict, c.steps, r.Findings, tc.want, tc.steps)
			}
			if tc.want == Unknown && !hasRule(r, "unreadable_schema") {
				t.Fatalf("%s: %+v, want unreadable_schema", tc.name, r.Findings)
			}
		})
	}
}

// TestMemoKeysStayShortUnderLongPointers: within MaxPointerBytes, a
// member name of 900 bytes above 2,000 subschemas made each memo key
// hold two pointers and bases (about 2 KB a step, 4 MB in all); a key now
// names each part by a number, a few bytes.
func TestMemoKeysStayShortUnderLongPointers(t *testing.T) {
	l := longNamePair(900, 2000)
	src := NewSource(l)
	c := &checker{a: src.s, b: src.s, memo: map[string]int{}, assumed: maxInt}
	if r := c.run("a.json", "b.json"); r.Verdict != Compatible {
		t.Fatalf("%s %+v, want compatible", r.Verdict, r.Findings)
	}
	keyBytes := 0
	for k := range c.memo {
		keyBytes += len(k)
	}
	if len(c.memo) < 2000 || keyBytes > 16*len(c.memo) {
		t.Fatalf("%d memo entries hold %d bytes of keys, want at least 2,000 entries of at most 16 bytes each", len(c.memo), keyBytes)
	}
}

// dagPair is two documents whose root reaches, through levels of
// definitions each with two members (named a<i> and b<i>, padded to
// nameLen bytes) referring to the next, a last definition of type string
// (a.json) or integer (b.json): one failing pair met at 2^levels paths.
func dagPair(levels, nameLen int) memLoader {
	doc := func(leaf string) []byte {
		var defs []string
		for i := range levels {
			pad := strings.Repeat("x", nameLen)
			defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a%d%s":{"$ref":"#/$defs/d%d"},"b%d%s":{"$ref":"#/$defs/d%d"}}}`, i, i, pad, i+1, i, pad, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"%s"}`, levels, leaf))
		return []byte(`{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`)
	}
	return memLoader{files: map[string][]byte{"a.json": doc("string"), "b.json": doc("integer")}}
}

// TestFailingPairMetAtManyPathsKeepsBoundedFindings: a pair that fails
// is not remembered, so it is compared again, and reported again, at
// every evaluation path that reaches it. Seventeen levels of two members
// each (a 1 KB document) made one check return 74,997 findings; with
// 900-byte member names (34 KB) their pointers held 1.2 GB, with 10,000
// bytes (340 KB) 12 GB after 48 GB allocated. A comparison now keeps at
// most MaxFindings findings (an Incompatible one among them: the verdict
// is unchanged), and one reached by a path past MaxPathBytes is
// too_complex (the 900-byte names pass it at the fifth level).
func TestFailingPairMetAtManyPathsKeepsBoundedFindings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nameLen int
		want    Verdict
	}{
		{"short member names", 1, Incompatible},
		{"900-byte member names", 900, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := dagPair(17, tc.nameLen)
			src := NewSource(l)
			r := Subsumes(src, "a.json", src, "b.json")
			text := 0
			for _, f := range r.Findings {
				text += len(f.Pointer) + len(f.At) + len(f.Detail)
				if len(f.Pointer) > MaxPathBytes+MaxPointerBytes+64 {
					t.Fatalf("a finding's pointer of %d bytes, want at most %d", len(f.Pointer), MaxPathBytes+MaxPointerBytes+64)
				}
			}
			if r.Verdict != tc.want || len(r.Findings) > MaxFindings {
				t.Fatalf("%s: %d findings (%d bytes), verdict %s; want at most %d, %s", tc.name, len(r.Findings), text, r.Verdict, MaxFindings, tc.want)
			}
			if tc.want == Unknown && !hasRule(r, "too_complex") {
				t.Fatalf("%s: %+v, want too_complex", tc.name, r.Findings[:min(2, len(r.Findings))])
			}
		})
	}
}

// TestMemoKeyOfPartsUnderLongBasesJoinsNoBaseText: a memo key numbered
// each part by its scope and node id, but built the id's text first,
// base, artifact and pointer joined, at every step and for every part: a
// base of up to 2 × MaxPointerBytes (COMPAT-14 amended) a part a step.
// A part is now named by its base's number and its own strings, so a key
// allocates what holds the numbers, not an id a part.
func TestMemoKeyOfPartsUnderLongBasesJoinsNoBaseText(t *testing.T) {
	base := artifactURL(strings.Repeat("d", 1000)+"/") + strings.Repeat("e", 1000) + "/"
	d := &document{key: "a.json", base: base, root: map[string]any{}}
	var a, b []part
	for i := range 32 {
		a = append(a, part{n: mkNode(d, fmt.Sprintf("/properties/p%d", i), base, map[string]any{})})
		b = append(b, part{n: mkNode(d, fmt.Sprintf("/properties/q%d", i), base, map[string]any{}), scope: 1})
	}
	c := &checker{}
	want := c.memoKey(a, b)
	allocs := testing.AllocsPerRun(20, func() {
		if c.memoKey(a, b) != want {
			t.Fatal("a memo key changed between two builds")
		}
	})
	if allocs >= float64(len(a)+len(b)) {
		t.Fatalf("a memo key of %d parts under a %d-byte base made %.0f allocations, want fewer than one a part", len(a)+len(b), len(base), allocs)
	}
}

// refsUnderEmbeddedBase is two documents like manyIDsUnderLongBase's,
// whose leaves, refs of them, each hold a distinct "$ref" to a member
// of "$defs" under a base of about 2,000 bytes (two nested relative
// "$id"s): each is written in an embedded schema resource, which the
// checker does not follow (whyEmbeddedRef).
func refsUnderEmbeddedBase(refs int) memLoader {
	var ps, ds []string
	for i := range refs {
		ps = append(ps, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
		ds = append(ds, fmt.Sprintf(`"d%d":{"type":"string"}`, i))
	}
	doc := func(d string) []byte {
		return []byte(`{"type":"array","items":{"$id":"` + strings.Repeat("d", 1000) + `/","items":{"$id":"` + strings.Repeat("e", 950) + `/","description":"` + d + `","$defs":{` + strings.Join(ds, ",") + `},"properties":{` + strings.Join(ps, ",") + `}}}}`)
	}
	return memLoader{files: map[string][]byte{"a.json": doc("a"), "b.json": doc("b")}}
}

// TestReferenceCacheUnderLongBasesJoinsNoBaseText: the cache of "$ref"
// resolutions (side.refs), kept as long as the Source and so across
// every check of a bundle, was keyed by the artifact key and the base
// joined (up to 2 × MaxPointerBytes a key), built at every resolve,
// even one answered from the cache, and even under an embedded schema
// resource, whose references are refused whatever they are: ten pairs
// of 4,900 such references (5.3 MB) kept 49,000 keys, 95 MB of text. A
// reference under an embedded resource is now refused before any key
// is built or kept, and a key is a struct of the node's own strings.
func TestReferenceCacheUnderLongBasesJoinsNoBaseText(t *testing.T) {
	l := refsUnderEmbeddedBase(200)
	src := NewSource(l)
	c := &checker{a: src.s, b: src.s, memo: map[string]int{}, assumed: maxInt}
	c.run("a.json", "b.json")
	if n := len(src.s.refs); n != 0 {
		t.Fatalf("200 references under an embedded resource left %d cache entries, want none", n)
	}

	long := memLoader{files: map[string][]byte{
		"a.json": []byte(`{"$id":"https://example.com/` + strings.Repeat("i", 1000) + `","$defs":{"d":{"type":"string"}}}`),
	}}
	s := NewSource(long).s
	d, e := s.load("a.json")
	if e != "" {
		t.Fatal(e)
	}
	root := mkNode(d, "", d.base, d.root)
	embedded := mkNode(d, "/$defs/d", d.base+strings.Repeat("e", 1000), map[string]any{})
	embedded.embedded = true
	if _, why := s.resolve(root, "#/$defs/d"); why != "" {
		t.Fatalf("a plain reference under a %d-byte base: %s", len(d.base), why)
	}
	for _, tc := range []struct {
		name string
		n    node
		why  string
	}{
		{"a cached reference under a 1,000-byte base", root, ""},
		{"a reference under an embedded resource's 2,000-byte base", embedded, whyEmbeddedRef},
	} {
		allocs := testing.AllocsPerRun(20, func() {
			if _, why := s.resolve(tc.n, "#/$defs/d"); why != tc.why {
				t.Fatalf("%s: %q, want %q", tc.name, why, tc.why)
			}
		})
		if allocs != 0 {
			t.Fatalf("%s: resolve made %.0f allocations, want none", tc.name, allocs)
		}
	}
	if n := len(s.refs); n != 1 {
		t.Fatalf("%d cache entries, want the plain reference's only", n)
	}
}

// TestSchemaWhoseDataHoldsIDsIsCompared: COMPAT-14 amended resolved
// the "$id" of every object the bounding walk met but a member of an
// object of subschemas, data among them, where node.child (and the
// validator) never reads one: a schema describing schema documents,
// whose "examples", "default", "const" or "enum" holds objects with
// nested relative "$id"s of 900 bytes, was refused unreadable_schema
// (its signed compatible claim failed at import). Only a subschema's
// "$id" is resolved now; every "$id" string is still held to
// MaxPointerBytes.
func TestSchemaWhoseDataHoldsIDsIsCompared(t *testing.T) {
	seg := func(c string) string { return strings.Repeat(c, 900) + "/" }
	nested := `{"$id":"` + seg("a") + `","items":{"$id":"` + seg("b") + `","items":{"$id":"` + seg("c") + `"}}}`
	data := `{"$id":"` + seg("a") + `","x":{"$id":"` + seg("b") + `","y":{"$id":"` + seg("c") + `"}}}`
	for _, tc := range []struct {
		name, kw string
		want     Verdict
	}{
		{"examples holding a schema with nested relative $ids", `"examples":[` + nested + `]`, Compatible},
		{"default holding data objects with $ids", `"default":` + data, Compatible},
		{"const holding data objects with $ids", `"const":` + data, Compatible},
		{"enum holding data objects with $ids", `"enum":[` + data + `,1]`, Compatible},
		{"an unknown keyword holding a schema with nested $ids", `"x-sample":` + nested, Compatible},
		{"examples holding a 2,000-byte $id", `"examples":[{"$id":"` + strings.Repeat("i", 2000) + `"}]`, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := func(d string) []byte {
				return []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","description":"` + d + `",` + tc.kw + `}`)
			}
			src := NewSource(memLoader{files: map[string][]byte{"a.json": doc("a"), "b.json": doc("b")}})
			c := &checker{a: src.s, b: src.s, memo: map[string]int{}, assumed: maxInt}
			r := c.run("a.json", "b.json")
			if r.Verdict != tc.want {
				t.Fatalf("%s: %s %+v, want %s", tc.name, r.Verdict, r.Findings, tc.want)
			}
			if tc.want == Unknown && !hasRule(r, "unreadable_schema") {
				t.Fatalf("%s: %+v, want unreadable_schema", tc.name, r.Findings)
			}
		})
	}
}
