package cliutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// BuildInfo is what --version prints: the module version and the VCS
// revision and time the binary was built from (runtime/debug.ReadBuildInfo).
// Fields the build did not record are "unknown" (a binary built with
// -buildvcs=false, or from outside a repository, has no revision).
type BuildInfo struct {
	Program   string `json:"program"`
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Time      string `json:"time"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go"`
}

// ReadBuild returns the BuildInfo of the running binary for program.
func ReadBuild(program string) BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	return buildInfoOf(program, bi, ok)
}

// buildInfoOf is ReadBuild with the build information given (tests).
func buildInfoOf(program string, bi *debug.BuildInfo, ok bool) BuildInfo {
	out := BuildInfo{Program: program, Module: "unknown", Version: "unknown", Revision: "unknown", Time: "unknown", GoVersion: "unknown"}
	if !ok || bi == nil {
		return out
	}
	if bi.Main.Path != "" {
		out.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		out.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		out.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Revision = s.Value
		case "vcs.time":
			out.Time = s.Value
		case "vcs.modified":
			out.Modified = s.Value == "true"
		}
	}
	return out
}

// String is the one-line human form of b.
func (b BuildInfo) String() string {
	s := fmt.Sprintf("%s %s (module %s, revision %s, commit time %s", b.Program, b.Version, b.Module, b.Revision, b.Time)
	if b.Modified {
		s += ", with uncommitted changes"
	}
	return s + ", " + b.GoVersion + ")"
}

// requiredUsage matches a flag usage that says the flag is required
// ("(required)", "(required; mode 0600)", "(bbolt; required)",
// "(repeatable, required)"), not "required unless ...".
var requiredUsage = regexp.MustCompile(`[(;,] ?required[;)]`)

// defaultInUsage matches "(default X)" or "(default: X)" written in a usage
// text.
var defaultInUsage = regexp.MustCompile(`\s*\(default:? ([^)]*)\)`)

// Prepare applies the CLI contract to app before it runs or documents
// itself: the writers of env, no os.Exit, usage errors, the help command,
// --version, shell completion, and help texts that show each command's
// required flags in its USAGE line and the real default of a flag whose
// zero value means "the default" (not "(default: 0)").
func Prepare(app *cli.App, env *Env) {
	app.Writer, app.ErrWriter = env.Stdout, env.Stderr
	app.ExitErrHandler = func(*cli.Context, error) {} // never os.Exit from inside
	app.HideVersion = true                            // our own --version below
	app.EnableBashCompletion = true
	usage := func(_ *cli.Context, err error, _ bool) error { return Usagef("%s", err.Error()) }
	app.OnUsageError = usage
	if byName(app.Flags, "version") == nil {
		app.Flags = append(app.Flags,
			&cli.BoolFlag{Name: "version", Usage: "print the version, VCS revision and build time, and exit", DisableDefaultText: true},
			&cli.BoolFlag{Name: "json", Usage: "with --version: print it as one JSON document", DisableDefaultText: true})
	}
	if byName(app.Flags, "help") == nil {
		// urfave/cli adds its --help flag only when it adds its own help
		// command, which ours replaces.
		app.Flags = append(app.Flags, helpFlag())
	}
	if byName(app.Commands, "help") == nil {
		app.Commands = append(app.Commands, helpCommand(app))
	}
	if byName(app.Commands, "version") == nil {
		app.Commands = append(app.Commands, versionCommand(app, env))
	}
	if byName(app.Commands, "completion") == nil {
		app.Commands = append(app.Commands, completionCommand(app))
	}
	if byName(app.Commands, "gen-docs") == nil {
		app.Commands = append(app.Commands, genDocsCommand(app))
	}
	var walk func(path string, cs []*cli.Command)
	walk = func(path string, cs []*cli.Command) {
		for _, c := range cs {
			c.OnUsageError = usage
			c.HideHelpCommand = true // "help" is for the app: "ampbundle help trust add"
			honestDefaults(c.Flags)
			full := path + " " + c.Name
			if c.UsageText == "" && len(c.Subcommands) == 0 {
				c.UsageText = usageLine(full, c)
			}
			if len(c.Subcommands) > 0 {
				group, own := c, c.Action
				names := strings.Fields(full)[1:]
				c.Action = func(cc *cli.Context) error {
					if cc.NArg() > 0 && cc.Args().First() == "help" {
						// "ampbundle trust help [add]"
						return showHelp(cc, app, append(names, cc.Args().Tail()...))
					}
					if own != nil {
						return own(cc)
					}
					if cc.NArg() > 0 {
						return unknownCommand(cc.Args().First(), group.Subcommands)
					}
					_ = cli.ShowSubcommandHelp(cc)
					return Usagef("no command given")
				}
			}
			walk(full, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	honestDefaults(app.Flags)
	if app.Action == nil {
		app.Action = func(c *cli.Context) error {
			if c.Bool("version") {
				return printVersion(env, app.Name, c.Bool("json"))
			}
			if c.NArg() > 0 {
				return unknownCommand(c.Args().First(), app.Commands)
			}
			_ = cli.ShowAppHelp(c)
			return Usagef("no command given")
		}
	}
}

// usageLine is the USAGE line of a command: its path, its required flags
// with their placeholders, "[options]" and its arguments.
func usageLine(path string, c *cli.Command) string {
	parts := []string{path}
	for _, f := range c.Flags {
		d, ok := f.(cli.DocGenerationFlag)
		if !ok || !requiredUsage.MatchString(d.GetUsage()) {
			continue
		}
		name := "--" + f.Names()[0]
		if d.TakesValue() {
			ph := placeholder(d.GetUsage())
			name += " " + ph
		}
		parts = append(parts, name)
	}
	parts = append(parts, "[options]")
	if a := strings.TrimSpace(c.ArgsUsage); a != "" {
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// placeholder is the `PLACEHOLDER` of a usage text (urfave/cli's
// convention), or VALUE.
func placeholder(usage string) string {
	if i := strings.IndexByte(usage, '`'); i >= 0 {
		if j := strings.IndexByte(usage[i+1:], '`'); j >= 0 {
			return usage[i+1 : i+1+j]
		}
	}
	return "VALUE"
}

// honestDefaults makes help print a flag's real default: "(default X)"
// written in the usage text becomes the flag's default text (instead of
// urfave/cli's "(default: 0)" for a flag whose 0 means "the default" and is
// refused when given), and bool flags do not print "(default: false)".
func honestDefaults(flags []cli.Flag) {
	for _, f := range flags {
		if b, ok := f.(*cli.BoolFlag); ok {
			b.DisableDefaultText = true
			continue
		}
		moveDefault(f)
	}
}

// moveDefault moves "(default X)" out of a flag's Usage into its
// DefaultText, unless the flag sets a DefaultText of its own. urfave/cli's
// flag types share no interface to set these fields, but each is a struct
// with both (a flag type without them is left as it is).
func moveDefault(f cli.Flag) {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	usage, text := v.Elem().FieldByName("Usage"), v.Elem().FieldByName("DefaultText")
	if usage.Kind() != reflect.String || text.Kind() != reflect.String || text.String() != "" {
		return
	}
	u := usage.String()
	if m := defaultInUsage.FindStringSubmatchIndex(u); m != nil {
		usage.SetString(u[:m[0]] + u[m[1]:])
		text.SetString(u[m[2]:m[3]])
	}
}

func completionCommand(app *cli.App) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "SHELL",
		Description: `Prints the completion script for SHELL on stdout, e.g.
  ` + app.Name + ` completion bash > /etc/bash_completion.d/` + app.Name + `
  ` + app.Name + ` completion fish > ~/.config/fish/completions/` + app.Name + `.fish
  ` + app.Name + ` completion zsh > "${fpath[1]}/_` + app.Name + `"
Each script asks the program for the commands and flags it offers
("` + app.Name + ` __complete WORD..."); where it offers none, the shell
completes file names.`,
		Action: func(c *cli.Context) error {
			if err := ExactArgs(c, 1, "a shell name (bash, zsh or fish)"); err != nil {
				return err
			}
			script := completionScript(c.Args().First(), app.Name)
			if script == "" {
				return Usagef("the shell must be bash, zsh or fish")
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

// DocFiles returns the generated reference of app: the man page
// (man/NAME.1, renderMan) and the markdown reference (reference/NAME.md),
// by relative path. Neither lists the help command (every page says how
// to get help). app must have been through Prepare.
func DocFiles(app *cli.App) (map[string][]byte, error) {
	app.Setup() // as when it runs: the help command and flag
	man := renderMan(app)
	if h := byName(app.Commands, "help"); h != nil && !h.Hidden {
		h.Hidden = true
		defer func() { h.Hidden = false }()
	}
	md, err := app.ToMarkdown()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		filepath.Join("man", app.Name+".1"):        []byte(man),
		filepath.Join("reference", app.Name+".md"): []byte(md),
	}, nil
}

func genDocsCommand(app *cli.App) *cli.Command {
	return &cli.Command{
		Name:      "gen-docs",
		Usage:     "write the man page and the markdown reference of this program",
		ArgsUsage: "DIR",
		Hidden:    true,
		Description: `Writes DIR/man/` + app.Name + `.1 and DIR/reference/` + app.Name + `.md, generated
from the commands themselves (the repository keeps them in docs/, and a test
fails when they differ from what this writes).`,
		Action: func(c *cli.Context) error {
			if err := ExactArgs(c, 1, "the output directory"); err != nil {
				return err
			}
			files, err := DocFiles(app)
			if err != nil {
				return Failf("io_error", "cannot render the reference").WithCause(err)
			}
			for rel, data := range files {
				p := filepath.Join(c.Args().First(), rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return Failf("io_error", "cannot create the output directory").WithCause(err)
				}
				if err := writeDocFile(p, data); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// helpCommand is "help [COMMAND...]": the app's help, or the help of a
// command at any depth ("ampbundle help trust add"), which urfave/cli's
// own help command does not reach.
func helpCommand(app *cli.App) *cli.Command {
	return &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the commands, or the help of one command",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			return showHelp(c, app, c.Args().Slice())
		},
	}
}

// showHelp prints the help of the command that names (a path from the top,
// "trust add") name, on stdout; a name that is not a command there is a
// usage error naming it.
func showHelp(c *cli.Context, app *cli.App, names []string) error {
	cmds := app.Commands
	for _, a := range names {
		cmd := byName(cmds, a)
		if cmd == nil {
			return unknownCommand(a, cmds)
		}
		cmds = cmd.Subcommands
	}
	return app.RunContext(c.Context, append(append([]string{app.Name}, names...), "--help"))
}

// versionCommand is "version [--json]": what --version prints.
func versionCommand(app *cli.App, env *Env) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, VCS revision and build time (as --version)",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print it as one JSON document"}},
		Action: func(c *cli.Context) error {
			if err := ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			return printVersion(env, app.Name, c.Bool("json"))
		},
	}
}

// printVersion prints the BuildInfo of program, as text or as JSON.
func printVersion(env *Env, program string, asJSON bool) error {
	b := ReadBuild(program)
	if asJSON {
		return PrintJSON(env.Stdout, b)
	}
	_, err := fmt.Fprintln(env.Stdout, b.String())
	return err
}

// writeDocFile writes data to p as every output is written: refused
// when p leads to anything but a regular file or nothing
// (regfile.JudgeOutput: a link another user planted at a reference file
// is never written through, a FIFO never waited on), else written to a
// temporary file beside it, then renamed over the name (docs/SPEC-DECISIONS.md
// CLI-105).
func writeDocFile(p string, data []byte) error {
	k, err := regfile.JudgeOutput(p)
	if errors.Is(err, regfile.ErrNotRegular) || err == nil && k != regfile.OutputFile {
		return Failf("io_error", "%s is not a regular file: the reference is not written there", Sanitize(p))
	}
	if err != nil {
		return Failf("io_error", "cannot examine %s", Sanitize(p)).WithCause(err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".gen-docs-*")
	if err != nil {
		return Failf("io_error", "cannot write the reference").WithCause(err)
	}
	defer os.Remove(f.Name()) // a no-op after the rename
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		return Failf("io_error", "cannot write the reference").WithCause(err)
	}
	return nil
}
