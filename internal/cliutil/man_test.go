package cliutil

import (
	"bytes"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestManPageEscapesHelpTexts: help texts reach the man page as text,
// never as roff requests: a line that begins with "." or "'" is protected,
// a backslash is printed, not interpreted, and characters beyond ASCII are
// written as code points (threat: a description line starting with
// ".'ampbundle export'" swallowed as an unknown request, a "\f" in a
// path switching fonts, and troff warning "invalid input character" at
// every "—").
func TestManPageEscapesHelpTexts(t *testing.T) {
	app := &cli.App{Name: "x", Usage: "a tool — for tests", Commands: []*cli.Command{{
		Name: "do", Usage: "do it", Description: "First line,\n'quoted' start and C:\\files\\new\n.TH NOT A HEADER\n\n  an example -v\n  kept as it is",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Value: "a-b", Usage: "write `FILE`"}},
		Action: func(*cli.Context) error { return nil },
	}}}
	Prepare(app, &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	man := renderMan(app)
	for _, want := range []string{
		".TH X 1 \"" + ManDate + "\" \"x\" \"User Commands\"\n",
		"x \\- a tool \\[u2014] for tests\n",
		"\\&'quoted' start and C:\\efiles\\enew\n",
		"\\&.TH NOT A HEADER\n",
		".nf\n  an example \\-v\n  kept as it is\n.fi\n",
		".TP\n\\fB\\-\\-out\\fR, \\fB\\-o\\fR \\fIFILE\\fR\nwrite FILE (default: \"a\\-b\")\n",
		".SH EXIT STATUS\n", ".SH SEE ALSO\n",
	} {
		if !strings.Contains(man, want) {
			t.Errorf("man page lacks %q:\n%s", want, man)
		}
	}
	if strings.Contains(man, "\n.TH NOT") || strings.Contains(man, ".SS x help") {
		t.Errorf("a help text became a request, or help is listed:\n%s", man)
	}
	for _, r := range man {
		if r > 0x7e || (r < 0x20 && r != '\n') {
			t.Fatalf("raw %U in the man page", r)
		}
	}
}
