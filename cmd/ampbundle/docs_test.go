package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// TestReferenceDocsMatchCommands: the man page and the markdown reference
// in docs/ are what the commands generate (threat: an operator reading a
// reference that no longer matches the binary). Regenerate them with
// `go run ./cmd/PROGRAM gen-docs docs`.
func TestReferenceDocsMatchCommands(t *testing.T) {
	env := &cliutil.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	app := newApp(env)
	cliutil.Prepare(app, env)
	files, err := cliutil.DocFiles(app)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("generated %d files, want a man page and a reference", len(files))
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", rel))
		if err != nil {
			t.Fatalf("%v (run: go run ./cmd/%s gen-docs docs)", err, app.Name)
		}
		// Honest defaults: a zero that the command refuses, or that means
		// "not given", is never shown as the default.
		if bytes.Contains(want, []byte("(default: 0)")) || bytes.Contains(want, []byte("(default: 0s)")) {
			t.Errorf("%s shows a zero default", rel)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s differs from what the commands generate (run: go run ./cmd/%s gen-docs docs)", rel, app.Name)
		}
	}
}

// TestHelpReachesSubcommands: "ampbundle help trust add" shows the help of
// trust add, with its required flags in the USAGE line; "help" alone lists
// the commands.
func TestHelpReachesSubcommands(t *testing.T) {
	r := runCLI(t, nil, "help", "trust", "add")
	if r.code != 0 || !strings.Contains(r.stdout, "ampbundle trust add --db FILE --name NAME --scope PREFIX [options] PUB") {
		t.Fatalf("help trust add: %d %q", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "help"); r.code != 0 || !strings.Contains(r.stdout, "import") || !strings.Contains(r.stdout, "completion") {
		t.Fatalf("help: %d %q", r.code, r.stdout)
	}
}
