package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/cliutil/clitest"
)

// TestScriptWrittenFromCLIDocReadsEveryDocumentedField: a script written
// from docs/CLI.md reads the documented keys of each command's --json
// output with the documented types; a key renamed, dropped, added or
// retyped on either side fails here, so the doc and the code cannot drift
// apart. It also fails for a labelled ampbundle example no case checks.
func TestScriptWrittenFromCLIDocReadsEveryDocumentedField(t *testing.T) {
	shapes := clitest.DocShapes(t, filepath.Join("..", "..", "docs", "CLI.md"))

	t.Run("the check catches drift", func(t *testing.T) {
		doc := map[string]any{"a": "x", "b?": 1.0, "m": map[string]any{"K": true}, "l": []any{map[string]any{"c": "y"}}, "j": "JSON"}
		for _, tc := range []struct {
			name, got string
			bad       bool
		}{
			{"as documented", `{"a":"s","b":2,"m":{"p":false,"q":true},"l":[{"c":"z"}],"j":[1]}`, false},
			{"an optional key absent", `{"a":"s","m":{},"l":[],"j":null}`, false},
			{"a documented key dropped", `{"m":{},"l":[],"j":1}`, true},
			{"an undocumented key", `{"a":"s","m":{},"l":[],"j":1,"new":1}`, true},
			{"a type changed", `{"a":1,"m":{},"l":[],"j":1}`, true},
			{"a map value retyped", `{"a":"s","m":{"p":"no"},"l":[],"j":1}`, true},
			{"an element key renamed", `{"a":"s","m":{},"l":[{"C":"z"}],"j":1}`, true},
		} {
			var got any
			if err := json.Unmarshal([]byte(tc.got), &got); err != nil {
				t.Fatal(err)
			}
			var errs []string
			clitest.MatchShape("$", doc, got, shapes, map[string]bool{}, &errs)
			if (len(errs) > 0) != tc.bad {
				t.Errorf("%s: errors %q, want errors: %v", tc.name, errs, tc.bad)
			}
		}
	})

	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	pub := samplePub("example-publisher")
	translate := filepath.Join(testdata, "translate.ampb")
	// The sample's input schema of org.example.translate.text 2.1.0.
	const inKey = "capabilities/org.example.translate.text/2.1.0/input.schema.json"
	const inHash = "0276a8a7792081dc02262d569a1ba5cb2f387f2ce3b9808f7a3de7593bb7a48a"
	steps := []struct {
		label string // the example the output must match
		args  []string
	}{
		{"ampbundle trust add", []string{"trust", "add", pub, "--name", "example", "--scope", "org.example", "--db", db}},
		{"SUMMARY", []string{"inspect", translate}},
		{"ampbundle verify", []string{"verify", translate, "--trust", pub}},
		{"ampbundle import", []string{"import", translate, "--db", db}},
		{"ampbundle ls", []string{"ls", "--db", db}},
		{"ampbundle check", []string{"check", "--db", db}},
		{"ampbundle resolve", []string{"resolve", "--db", db, "--bundle-id", "org.example.translate", "--artifact-key", inKey, "--hash", inHash}},
		{"", []string{"trust", "threshold", "org.example", "2", "--db", db}},
		{"ampbundle trust ls", []string{"trust", "ls", "--db", db}},
		{"ampbundle rm", []string{"rm", "org.example.translate", "--db", db}},
	}
	used := map[string]bool{}
	for _, st := range steps {
		r := runCLI(t, nil, append(st.args, "--json")...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(st.args[:2], " "), r.code, r.stdout, r.stderr)
		}
		if st.label == "" {
			continue
		}
		want, ok := shapes[st.label]
		if !ok {
			t.Errorf("docs/CLI.md has no example labelled %q", st.label)
			continue
		}
		used[st.label] = true
		var got any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("%s: stdout is not one JSON document: %v\n%s", st.label, err, r.stdout)
		}
		var errs []string
		clitest.MatchShape("$", want, got, shapes, used, &errs)
		slices.Sort(errs)
		for _, e := range errs {
			t.Errorf("%s --json, against docs/CLI.md: %s", st.label, e)
		}
	}
	for label := range shapes {
		if strings.HasPrefix(label, "ampbundle ") && !used[label] {
			t.Errorf("docs/CLI.md's example %q is checked by no case here", label)
		}
	}
}
