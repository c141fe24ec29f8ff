package schemagraph_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// libraryTargets compiles doc (draft 2020-12, the offline validator's
// settings) at the synthetic URL of "a.json" and returns which of labels
// the reference "#s" at /properties/n resolves to, over tries compiles
// (the library picks among anchors declared twice in map order), or
// ok false if it does not compile.
func libraryTargets(t *testing.T, doc string, labels []string, tries int) (got map[string]bool, ok bool) {
	t.Helper()
	got = map[string]bool{}
	for range tries {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		c.AssertFormat = true
		u := schemagraph.ArtifactURL("a.json")
		if err := c.AddResource(u, strings.NewReader(doc)); err != nil {
			t.Fatalf("AddResource: %v", err)
		}
		sch, err := c.Compile(u)
		if err != nil {
			return nil, false
		}
		for _, l := range labels {
			if sch.Validate(map[string]any{"n": l}) == nil {
				got[l] = true
			}
		}
	}
	return got, true
}

// TestAnchorOutsideASchemaPositionIsNotTheDocuments: "$anchor" names a
// subschema only where a subschema stands (JSON Schema 2020-12 §8.2.2).
// An Index that walked every member but enum/const/examples/default
// indexed an anchor inside an unknown keyword ("$decoy" sorts before
// "$defs", so it was first), and compat compared "$ref":"#s" against the
// decoy while the validator (jsonschema v5.3.1) enforced the real one.
// Index walks the positions the library walks (its draft 2020-12 table,
// including "additionalItems", "dependencies" and "definitions", which it
// also walks there), treats "$id":"" and "$id":"#" as no "$id" as the
// library does, and for each document here names the subschema the
// library's "#s" resolves to, none where the library finds none, and a
// duplicate wherever the library could pick either of two.
func TestAnchorOutsideASchemaPositionIsNotTheDocuments(t *testing.T) {
	s := func(label string) string { return fmt.Sprintf(`{"$anchor":"s","const":%q}`, label) }
	for _, c := range []struct {
		name, members string
		labels        []string
		want          string // the label Index and the library agree on; "" none; "dup" a duplicate
		// dataDup: the name is also declared in data, so Index lists it
		// in Duplicates though this compile resolves it to want: a JSON
		// pointer reference to that spot, in this document or in any
		// other the validator compiles with it, makes the data's
		// declaration the document's too (compat's
		// TestPointerRefInAnotherArtifactMakesAnchorsAmbiguous).
		dataDup bool
	}{
		{"unknown keyword before $defs", `"$decoy":` + s("decoy") + `,"$defs":{"real":` + s("real") + `}`, []string{"decoy", "real"}, "real", true},
		{"only in an unknown keyword", `"$decoy":` + s("decoy"), []string{"decoy"}, "", false},
		{"data keywords", `"$defs":{"h":{"enum":[` + s("enum") + `],"default":` + s("default") + `,"examples":[` + s("ex") + `],"const":` + s("const") + `}},"definitions":{"real":` + s("real") + `}`, []string{"enum", "default", "ex", "const", "real"}, "real", true},
		{"additionalItems (not a 2020-12 keyword; the library walks it)", `"$decoy":` + s("decoy") + `,"additionalItems":` + s("ai"), []string{"decoy", "ai"}, "ai", true},
		{"dependencies member", `"x-c":` + s("c") + `,"dependencies":{"x":` + s("dep") + `}`, []string{"c", "dep"}, "dep", true},
		{"prefixItems and items", `"$defs":{"h":{"prefixItems":[true,` + s("pi") + `],"items":{"x-items":` + s("no") + `}}}`, []string{"pi", "no"}, "pi", true},
		{"patternProperties under a long path", `"properties":{"n":{"$ref":"#s"},"o":{"properties":{"p":{"patternProperties":{"^a":` + s("pp") + `}}}}}`, []string{"pp"}, "pp", false},
		{"empty $id is no $id", `"$defs":{"e":{"$id":"","$anchor":"s","const":"e"}}`, []string{"e"}, "e", false},
		{"fragment-only $id is no $id", `"$defs":{"e":{"$id":"#","$anchor":"s","const":"e"}}`, []string{"e"}, "e", false},
		{"embedded resource", `"$defs":{"e":{"$id":"other.json","$anchor":"s","const":"e"}}`, []string{"e"}, "", false},
		{"twice", `"$defs":{"a":` + s("a") + `,"b":` + s("b") + `}`, []string{"a", "b"}, "dup", false},
		{"anchor and dynamic anchor", `"$defs":{"a":{"$dynamicAnchor":"s","const":"a"},"b":` + s("b") + `}`, []string{"a", "b"}, "dup", false},
		{"embedded resource at the document's own uri", `"$defs":{"a":` + s("a") + `,"e":{"$id":"a.json","$defs":{"b":` + s("b") + `}}}`, []string{"a", "b"}, "dup", false},
	} {
		doc := `{"properties":{"n":{"$ref":"#s"}},` + c.members + `}`
		if strings.HasPrefix(c.members, `"properties"`) {
			doc = `{` + c.members + `}`
		}
		lib, compiles := libraryTargets(t, doc, c.labels, 40)
		root, err := schemagraph.Parse([]byte(doc), schemagraph.Options{EncodingJSON: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := schemagraph.Index(root)
		index := ""
		if p, ok := r.Anchors["s"]; ok {
			v, _ := schemagraph.Pointer(root, p)
			index, _ = v.(map[string]any)["const"].(string)
		}
		dup := slices.Contains(r.Duplicates, "s")
		switch {
		case c.want == "dup":
			t.Logf("%s: library picks %v", c.name, slices.Sorted(maps.Keys(lib)))
			if !dup || !compiles || len(lib) == 0 {
				t.Errorf("%s: duplicates %v, library %v (compiles %v)", c.name, r.Duplicates, lib, compiles)
			}
		case c.want == "":
			if compiles || index != "" || dup {
				t.Errorf("%s: library compiles %v, Index names %q (duplicates %v); want no anchor for both", c.name, compiles, index, r.Duplicates)
			}
		default:
			if !compiles || len(lib) != 1 || !lib[c.want] || index != c.want || dup != c.dataDup {
				t.Errorf("%s: library %v (compiles %v), Index %q (duplicates %v); want both %q", c.name, slices.Sorted(maps.Keys(lib)), compiles, index, r.Duplicates, c.want)
			}
		}
	}
}
