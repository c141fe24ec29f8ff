package cliutil

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
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
	if findFlag(app.Flags, "version") == nil {
		app.Flags = append(app.Flags,
			&cli.BoolFlag{Name: "version", Usage: "print the version, VCS revision and build time, and exit", DisableDefaultText: true},
			&cli.BoolFlag{Name: "json", Usage: "with --version: print it as one JSON document", DisableDefaultText: true})
	}
	if findCommand(app.Commands, "help") == nil {
		app.Commands = append(app.Commands, helpCommand(app))
	}
	if findCommand(app.Commands, "completion") == nil {
		app.Commands = append(app.Commands, completionCommand(app))
	}
	if findCommand(app.Commands, "gen-docs") == nil {
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
			if len(c.Subcommands) > 0 && c.Action == nil {
				c.Action = func(cc *cli.Context) error {
					_ = cli.ShowSubcommandHelp(cc)
					if cc.NArg() > 0 {
						return Usagef("unknown command")
					}
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
				b := ReadBuild(app.Name)
				if c.Bool("json") {
					return PrintJSON(env.Stdout, b)
				}
				_, err := fmt.Fprintln(env.Stdout, b.String())
				return err
			}
			if c.NArg() > 0 {
				return Usagef("unknown command")
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
		switch v := f.(type) {
		case *cli.BoolFlag:
			v.DisableDefaultText = true
		case *cli.Int64Flag:
			v.Usage, v.DefaultText = moveDefault(v.Usage, v.DefaultText)
		case *cli.IntFlag:
			v.Usage, v.DefaultText = moveDefault(v.Usage, v.DefaultText)
		case *cli.UintFlag:
			v.Usage, v.DefaultText = moveDefault(v.Usage, v.DefaultText)
		case *cli.Uint64Flag:
			v.Usage, v.DefaultText = moveDefault(v.Usage, v.DefaultText)
		case *cli.DurationFlag:
			v.Usage, v.DefaultText = moveDefault(v.Usage, v.DefaultText)
		case *cli.StringFlag:
			v.Usage, v.DefaultText = moveDefault(v.Usage, v.DefaultText)
		}
	}
}

func moveDefault(usage, text string) (string, string) {
	m := defaultInUsage.FindStringSubmatchIndex(usage)
	if m == nil || text != "" {
		return usage, text
	}
	return usage[:m[0]] + usage[m[1]:], usage[m[2]:m[3]]
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// completionScripts are the shell completion scripts: each asks the program
// itself for the candidates (urfave/cli's --generate-bash-completion).
const bashCompletion = `# bash completion for %[1]s: source it, or put it in
# /etc/bash_completion.d/%[1]s (zsh: autoload bashcompinit && bashcompinit first)
_%[2]s_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" opts
  if [[ "$cur" == "-"* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _%[2]s_complete %[1]s
`

func completionCommand(app *cli.App) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "SHELL",
		Description: `Prints the completion script for SHELL on stdout, e.g.
  ` + app.Name + ` completion bash > /etc/bash_completion.d/` + app.Name + `
  ` + app.Name + ` completion fish > ~/.config/fish/completions/` + app.Name + `.fish
For zsh, load bashcompinit and source the bash script.`,
		Action: func(c *cli.Context) error {
			if err := ExactArgs(c, 1, "a shell name (bash, zsh or fish)"); err != nil {
				return err
			}
			switch c.Args().First() {
			case "bash", "zsh":
				_, err := fmt.Fprintf(c.App.Writer, bashCompletion, app.Name, strings.ReplaceAll(app.Name, "-", "_"))
				return err
			case "fish":
				// Without the help command: urfave/cli's shared help
				// command lists itself as a subcommand, and the fish
				// generator would recurse into it forever.
				fa := *app
				fa.Commands = nil
				for _, sc := range app.Commands {
					if sc.Name != "help" {
						fa.Commands = append(fa.Commands, sc)
					}
				}
				s, err := fa.ToFishCompletion()
				if err != nil {
					return Failf("io_error", "cannot render the fish completion").WithCause(err)
				}
				_, err = fmt.Fprint(c.App.Writer, s)
				return err
			}
			return Usagef("the shell must be bash, zsh or fish")
		},
	}
}

// DocFiles returns the generated reference of app: the man page
// (man/NAME.1) and the markdown reference (reference/NAME.md), by relative
// path. app must have been through Prepare.
func DocFiles(app *cli.App) (map[string][]byte, error) {
	app.Setup() // as when it runs: the help command and flag
	man, err := app.ToMan()
	if err != nil {
		return nil, err
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
				if err := os.WriteFile(p, data, 0o644); err != nil {
					return Failf("io_error", "cannot write the reference").WithCause(err)
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
			cmds := app.Commands
			for _, a := range c.Args().Slice() {
				cmd := findCommand(cmds, a)
				if cmd == nil || a == "help" || a == "h" {
					return Usagef("unknown command")
				}
				cmds = cmd.Subcommands
			}
			return app.RunContext(c.Context, append(append([]string{app.Name}, c.Args().Slice()...), "--help"))
		},
	}
}
