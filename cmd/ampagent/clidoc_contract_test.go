package main

import (
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/internal/cliutil/clitest"
)

// TestScriptWrittenFromCLIDocReadsEveryDocumentedField: a script written
// from docs/CLI.md reads the documented keys of each ampagent command's
// --json output with the documented types (query and invoke against a
// real agent on loopback HTTP); a key renamed, dropped, added or retyped on
// either side fails here. It also fails for a labelled ampagent example no
// case checks.
func TestScriptWrittenFromCLIDocReadsEveryDocumentedField(t *testing.T) {
	shapes := clitest.DocShapes(t, filepath.Join("..", "..", "docs", "CLI.md"))

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
		clitest.CheckOutput(t, shapes, used, st.label, r.stdout)
	}
	clitest.CheckAllUsed(t, shapes, used, "ampagent ")
}
