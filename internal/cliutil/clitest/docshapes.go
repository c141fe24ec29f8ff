package clitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The --json shapes of docs/CLI.md are a contract: a script, or a second
// implementation, is written from the fenced examples labelled with a
// command ("```json ampagent query") or a shape ("```json SUMMARY"). The
// conventions (docs/CLI.md §1.2, "The shapes"): a key ending in "?" is
// printed only when it applies; an UPPERCASE key stands for any key; an
// array shows one element; a string value that is the label of another
// UPPERCASE shape stands for it, and "JSON" for any value.

// DocShapes returns the labelled JSON examples of the Markdown file at
// path (docs/CLI.md) by label.
func DocShapes(t testing.TB, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
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

var shapeName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// jsonType is the JSON type of a decoded value.
func jsonType(v any) string {
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

// MatchShape appends to errs every way got (a decoded --json output)
// differs from the documented shape want at path; shapes are DocShapes's,
// and used collects the shape names it followed.
func MatchShape(path string, want, got any, shapes map[string]any, used map[string]bool, errs *[]string) {
	if name, ok := want.(string); ok && name == "JSON" {
		return
	} else if ref, ok := shapes[name]; ok && shapeName.MatchString(name) {
		used[name] = true
		MatchShape(path, ref, got, shapes, used, errs)
		return
	}
	if wt, gt := jsonType(want), jsonType(got); wt != gt {
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
			MatchShape(fmt.Sprintf("%s[%d]", path, i), w[0], e, shapes, used, errs)
		}
	case map[string]any:
		g := got.(map[string]any)
		if len(w) == 1 {
			for k, v := range w {
				if shapeName.MatchString(k) { // a map: any key
					for gk, gv := range g {
						MatchShape(path+"."+gk, v, gv, shapes, used, errs)
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
				MatchShape(path+"."+name, v, gv, shapes, used, errs)
			}
		}
		for k := range g {
			if !keys[k] {
				*errs = append(*errs, fmt.Sprintf("%s.%s: printed, not documented", path, k))
			}
		}
	}
}

// CheckOutput checks stdout, the --json output of the step labelled
// label, against that label's example in shapes, and marks the examples
// it used in used.
func CheckOutput(t testing.TB, shapes map[string]any, used map[string]bool, label, stdout string) {
	t.Helper()
	want, ok := shapes[label]
	if !ok {
		t.Errorf("docs/CLI.md has no example labelled %q", label)
		return
	}
	used[label] = true
	var got any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%s: stdout is not one JSON document: %v\n%s", label, err, stdout)
	}
	var errs []string
	MatchShape("$", want, got, shapes, used, &errs)
	slices.Sort(errs)
	for _, e := range errs {
		t.Errorf("%s --json, against docs/CLI.md: %s", label, e)
	}
}

// CheckAllUsed fails t for every example whose label starts with prefix
// that no step checked.
func CheckAllUsed(t testing.TB, shapes map[string]any, used map[string]bool, prefix string) {
	t.Helper()
	for label := range shapes {
		if strings.HasPrefix(label, prefix) && !used[label] {
			t.Errorf("docs/CLI.md's example %q is checked by no case here", label)
		}
	}
}
