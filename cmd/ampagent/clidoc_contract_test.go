package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The --json shapes of docs/CLI.md are a contract: a script, or a second
// implementation, is written from the fenced examples labelled with a
// command ("```json ampagent query") or a shape ("```json SCHEMA_REF"). The
// conventions (docs/CLI.md §1.2, "The shapes"): a key ending in "?" is
// printed only when it applies; an UPPERCASE key stands for any key; an
// array shows one element; a string value that is the label of another
// UPPERCASE shape stands for it, and "JSON" for any value.

// clidocShapes returns the labelled JSON examples of docs/CLI.md by label.
func clidocShapes(t *testing.T) map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shapes := map[string]any{}
	label, body, in := "", "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```json "):
			label, body, in = strings.TrimSpace(strings.TrimPrefix(line, "```json ")), "", true
		case in && line == "```":
			in = false
			var v any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatalf("docs/CLI.md: the example %q is not JSON: %v", label, err)
			}
			if _, dup := shapes[label]; dup {
				t.Fatalf("docs/CLI.md: two examples are labelled %q", label)
			}
			shapes[label] = v
		case in:
			body += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return shapes
}

var clidocName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// clidocType is the JSON type of a decoded value.
func clidocType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// clidocMatch appends to errs every way got differs from the documented
// shape want at path; used collects the shape names it followed.
func clidocMatch(path string, want, got any, shapes map[string]any, used map[string]bool, errs *[]string) {
	if name, ok := want.(string); ok && name == "JSON" {
		return
	} else if ref, ok := shapes[name]; ok && clidocName.MatchString(name) {
		used[name] = true
		clidocMatch(path, ref, got, shapes, used, errs)
		return
	}
	if wt, gt := clidocType(want), clidocType(got); wt != gt {
		*errs = append(*errs, fmt.Sprintf("%s: documented as %s, printed as %s", path, wt, gt))
		return
	}
	switch w := want.(type) {
	case []any:
		g := got.([]any)
		if len(w) != 1 && len(g) > 0 {
			*errs = append(*errs, fmt.Sprintf("%s: the doc shows %d elements, not the one element shape", path, len(w)))
			return
		}
		for i, e := range g {
			clidocMatch(fmt.Sprintf("%s[%d]", path, i), w[0], e, shapes, used, errs)
		}
	case map[string]any:
		g := got.(map[string]any)
		if len(w) == 1 {
			for k, v := range w {
				if clidocName.MatchString(k) { // a map: any key
					for gk, gv := range g {
						clidocMatch(path+"."+gk, v, gv, shapes, used, errs)
					}
					return
				}
			}
		}
		keys := map[string]bool{}
		for k, v := range w {
			name, optional := strings.CutSuffix(k, "?")
			keys[name] = true
			gv, ok := g[name]
			switch {
			case !ok && !optional:
				*errs = append(*errs, fmt.Sprintf("%s.%s: documented, not printed", path, name))
			case ok:
				clidocMatch(path+"."+name, v, gv, shapes, used, errs)
			}
		}
		for k := range g {
			if !keys[k] {
				*errs = append(*errs, fmt.Sprintf("%s.%s: printed, not documented", path, k))
			}
		}
	}
}

// TestScriptWrittenFromCLIDocReadsEveryDocumentedField: a script written
// from docs/CLI.md reads the documented keys of each ampagent command's
// --json output with the documented types (query and invoke against a
// real agent on loopback HTTP); a key renamed, dropped, added or retyped on
// either side fails here. It also fails for a labelled ampagent example no
// case checks.
func TestScriptWrittenFromCLIDocReadsEveryDocumentedField(t *testing.T) {
	shapes := clidocShapes(t)

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
			clidocMatch("$", doc, got, shapes, map[string]bool{}, &errs)
			if (len(errs) > 0) != tc.bad {
				t.Errorf("%s: errors %q, want errors: %v", tc.name, errs, tc.bad)
			}
		}
	})

	ta := startAgents(t)
	dir := t.TempDir()
	db := cardStore(t, true)
	cardKey, cardDID := keygen(t, dir, "card.pem")
	a2 := loadVector(t, "a2-message-null-body")
	a2hex := writeFile(t, "a2.hex", a2.Output.Message)
	r := runCLI(t, "", "card", "--db", db, "--key", cardKey, "--a2a", "--url", "https://agent.example/amp")
	if r.code != 0 {
		t.Fatalf("card --a2a: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	a2a := writeFile(t, "a2a.json", r.stdout)
	steps := []struct {
		label string // the example the output must match
		args  []string
	}{
		{"ampagent keygen", []string{"keygen", "-o", filepath.Join(dir, "new.pem")}},
		{"ampagent query", []string{"query", ta.url, "--key", ta.caller, "--to", ta.did, "--capability", translateCap, "--limit", "2"}},
		{"ampagent invoke", []string{"invoke", ta.url, "--key", ta.caller, "--to", ta.did, "--id", translateCap + ":2.1.0", "--params", `{"text":"hello","target":"fr"}`}},
		{"ampagent msg inspect", []string{"msg", "inspect", "--hex", a2hex}},
		{"ampagent msg verify", []string{"msg", "verify", "--hex", a2hex, "--pub", a1Pub, "--now", "1707055260000"}},
		{"ampagent card", []string{"card", "--db", db, "--catalog"}},
		{"ampagent card verify", []string{"card", "verify", a2a, "--key", cardDID}},
	}
	used := map[string]bool{}
	for _, st := range steps {
		r := runCLI(t, "", append(st.args, "--json")...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", st.label, r.code, r.stdout, r.stderr)
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
		clidocMatch("$", want, got, shapes, used, &errs)
		slices.Sort(errs)
		for _, e := range errs {
			t.Errorf("%s --json, against docs/CLI.md: %s", st.label, e)
		}
	}
	for label := range shapes {
		if strings.HasPrefix(label, "ampagent ") && !used[label] {
			t.Errorf("docs/CLI.md's example %q is checked by no case here", label)
		}
	}
}
