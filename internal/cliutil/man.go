package cliutil

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// ManDate is the date in the header of the generated man pages. It is a
// constant, not the time of generation, so that the pages are reproducible
// (TestReferenceDocsMatchCommands compares them with the committed ones):
// set it to the day of the change when a change alters what the pages say
// in substance (a command, a flag, an exit status), and regenerate them.
const ManDate = "2026-12-01"

// manSection is one titled list of a man page: a term and its text.
type manSection struct {
	title string
	items [][2]string
}

// manExtras is what a program's man page says beyond its commands: the
// conventions docs/CLI.md states for the whole program.
type manExtras struct {
	description string
	sections    []manSection // EXIT STATUS, SIGNALS, FILES
	seeAlso     []string
}

// exitStatus is the EXIT STATUS of both programs (docs/CLI.md §1.1).
var exitStatusItems = [...][2]string{
	{"0", "success; also --help, -h, help, version, --version and completion, and a graceful stop of serve on SIGINT or SIGTERM"},
	{"1", "failure: the command ran and something was refused, missing, damaged or unreadable; the error names the cause (with --json, as the error document on stdout)"},
	{"2", "usage error: an unknown command or flag (the nearest command is suggested), a missing required flag, a wrong number of arguments, a malformed flag value, or no command given"},
}

// manExtrasOf returns the extra sections of the man page of the program
// name ("ampbundle" or "ampagent"; any other program gets the exit status
// and the references only).
func manExtrasOf(name string) manExtras {
	exit := manSection{title: "EXIT STATUS", items: exitStatusItems[:]}
	switch name {
	case "ampbundle":
		exit.items = append(exit.items[:len(exit.items):len(exit.items)],
			[2]string{"10, 11", "only sync --detailed-exitcode: 10 something was imported or applied (with --dry-run: would be), 11 something was refused"},
			[2]string{"130", "only import: stopped by SIGINT or SIGTERM; what it staged is rolled back, nothing is imported"})
		return manExtras{
			description: `ampbundle builds, signs and verifies capability-schema bundles, and keeps the
registry store an offline AMP agent serves them from: publisher keys and the
scopes they are trusted for, installed bundles, and an audit log. A store is
created by the first "trust add"; "import" installs a bundle only when it
verifies against the trusted keys, and "check" reports a damaged store or an
expired bundle. "serve" and "sync" mirror bundles from one store to another.
Every command prints one JSON document with --json, errors included.`,
			sections: []manSection{exit,
				{title: "SIGNALS", items: [][2]string{
					{"SIGINT, SIGTERM", "serve stops gracefully: it finishes the requests in flight and exits 0. import rolls back what it staged, says \"interrupted: nothing was imported\" and exits 130 (a second signal stops it at once). Any other command stops at once, leaving no partial output file behind."},
				}},
				{title: "FILES", items: [][2]string{
					{"DB", "the registry store given with --db (bbolt, mode 0600), created only by trust add"},
					{"DB.admin.sock", "the admin socket of an ampagent serve holding the store (--admin-socket); registry commands go through it while the agent runs"},
					{"DB.ledger.wal", "the idempotency ledger of an agent serving the store"},
				}},
			},
			seeAlso: []string{"ampagent(1)", "docs/CLI.md and docs/FORMAT.md in the source repository"},
		}
	case "ampagent":
		return manExtras{
			description: `ampagent serves the capabilities of a local registry store (built and filled
with ampbundle) to other agents over AMP, on HTTP or TCP, running the handler
programs its config names; and calls other agents: query asks which
capabilities an agent serves, invoke runs one, both verifying every signed
reply. "demo" runs the whole flow on an embedded sample with no setup. Every
command prints one JSON document with --json, errors included.`,
			sections: []manSection{exit,
				{title: "SIGNALS", items: [][2]string{
					{"SIGHUP", "serve re-reads its config file: the handlers and the allow rules. A config that does not load is refused with a log line, and the running one stays."},
					{"SIGINT, SIGTERM", "serve stops gracefully: it stops accepting, finishes the requests in flight and exits 0."},
				}},
				{title: "FILES", items: [][2]string{
					{"KEY", "the agent's or caller's identity (--key), written by keygen with mode 0600"},
					{"CONFIG", "the serve config (--config, JSON): handlers, allow rules, limits"},
					{"DB", "the registry store (--db), held read-write while serve runs"},
					{"DB.admin.sock", "the admin socket serve listens on for ampbundle's registry commands (--admin-socket)"},
					{"DB.ledger.wal", "the idempotency ledger serve keeps beside the store"},
				}},
			},
			seeAlso: []string{"ampbundle(1)", "docs/CLI.md and docs/TRANSPORT.md in the source repository"},
		}
	}
	return manExtras{sections: []manSection{exit}}
}

// renderMan writes the section 1 man page of app (after Prepare): NAME,
// SYNOPSIS, DESCRIPTION, GLOBAL OPTIONS, COMMANDS (each with its usage
// line, description and flags; hidden commands and the help command left
// out), then EXIT STATUS, SIGNALS, FILES and SEE ALSO.
func renderMan(app *cli.App) string {
	x := manExtrasOf(app.Name)
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s 1 %q %q \"User Commands\"\n", strings.ToUpper(app.Name), ManDate, app.Name)
	b.WriteString(".nh\n.ad l\n")
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", app.Name, roffText(app.Usage))
	b.WriteString(".SH SYNOPSIS\n")
	fmt.Fprintf(&b, ".B %s\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR...]\n.br\n", app.Name)
	fmt.Fprintf(&b, ".B %s\n\\fBhelp\\fR [\\fICOMMAND\\fR [\\fISUBCOMMAND\\fR]]\n.br\n", app.Name)
	fmt.Fprintf(&b, ".B %s\n\\fB\\-\\-version\\fR [\\fB\\-\\-json\\fR]\n", app.Name)
	if x.description != "" {
		b.WriteString(".SH DESCRIPTION\n")
		writeParagraphs(&b, x.description)
	}
	b.WriteString(".SH GLOBAL OPTIONS\n")
	writeFlags(&b, app.Flags)
	b.WriteString(".SH COMMANDS\n")
	var walk func(path string, cs []*cli.Command)
	walk = func(path string, cs []*cli.Command) {
		for _, c := range cs {
			if c.Hidden || (path == app.Name && c.Name == "help") {
				continue
			}
			full := path + " " + c.Name
			fmt.Fprintf(&b, ".SS %s\n", roffText(full))
			if len(c.Aliases) > 0 {
				fmt.Fprintf(&b, "(also: %s)\n.br\n", roffText(strings.Join(c.Aliases, ", ")))
			}
			b.WriteString(roffLine(c.Usage) + "\n")
			if len(c.Subcommands) == 0 {
				fmt.Fprintf(&b, ".PP\n.RS\n.nf\n%s\n.fi\n.RE\n", roffText(c.UsageText))
			}
			if c.Description != "" {
				writeParagraphs(&b, c.Description)
			}
			writeFlags(&b, c.Flags)
			walk(full, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	for _, s := range x.sections {
		fmt.Fprintf(&b, ".SH %s\n", s.title)
		for _, it := range s.items {
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", roffText(it[0]), roffLine(it[1]))
		}
	}
	b.WriteString(".SH SEE ALSO\n")
	for i, s := range x.seeAlso {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(roffLine(s))
	}
	if len(x.seeAlso) == 0 {
		b.WriteString(roffLine(app.Name + " help COMMAND"))
	}
	b.WriteString("\n")
	return b.String()
}

// writeParagraphs writes text (a help description: paragraphs separated by
// blank lines) as roff: a paragraph with an indented line (an example, a
// list) keeps its lines as they are; any other is filled.
func writeParagraphs(b *strings.Builder, text string) {
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		p = strings.Trim(p, "\n")
		if p == "" {
			continue
		}
		lines := strings.Split(p, "\n")
		verbatim := false
		for _, l := range lines {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
				verbatim = true
			}
		}
		b.WriteString(".PP\n")
		if verbatim {
			b.WriteString(".nf\n")
		}
		for _, l := range lines {
			b.WriteString(roffLine(l) + "\n")
		}
		if verbatim {
			b.WriteString(".fi\n")
		}
	}
}

// writeFlags writes the visible flags as a tagged list: names, the value's
// placeholder, the usage and the default.
func writeFlags(b *strings.Builder, flags []cli.Flag) {
	for _, f := range flags {
		if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		var names []string
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, `\fB\-`+roffText(n)+`\fR`)
			} else {
				names = append(names, `\fB\-\-`+roffText(n)+`\fR`)
			}
		}
		tag := strings.Join(names, ", ")
		usage := ""
		if d, ok := f.(cli.DocGenerationFlag); ok {
			usage = strings.ReplaceAll(d.GetUsage(), "`", "")
			if d.TakesValue() {
				tag += ` \fI` + roffText(placeholder(d.GetUsage())) + `\fR`
			}
			if def := d.GetDefaultText(); def != "" && d.TakesValue() {
				usage += " (default: " + def + ")"
			} else if v := d.GetValue(); d.TakesValue() && v != "" && v != `""` {
				usage += " (default: " + v + ")"
			}
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", tag, roffLine(usage))
	}
}

// roffText escapes text for roff: a backslash is written \e, a hyphen \-
// (a minus, so that options can be searched for and copied), and any
// character beyond ASCII as its code point, \[uXXXX] (groff and mandoc
// read it whatever the locale; a raw "—" is an invalid input character to
// troff without a preprocessor).
func roffText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roffLine is roffText for a whole input line: a line that would begin
// with a control character ("." or "'") is protected with \&, and leading
// spaces are kept.
func roffLine(s string) string {
	s = roffText(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
