package main

import (
	"path/filepath"
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
		clitest.CheckOutput(t, shapes, used, st.label, r.stdout)
	}
	clitest.CheckAllUsed(t, shapes, used, "ampbundle ")
}
