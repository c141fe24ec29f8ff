package cliutil

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// CompleteCommand is the hidden first argument the completion scripts call
// the program with: "PROG __complete WORD... CURRENT" prints the candidates
// for CURRENT, one a line (nothing: let the shell complete file names).
const CompleteCommand = "__complete"

// maxTypedShown bounds how much of an unknown command name an error quotes.
const maxTypedShown = 64

// Complete returns the completion candidates for the last of words (the
// word being typed, possibly empty), after the words before it (the command
// line without the program name): the flags of the command named so far
// when the word starts with "-" (less those already given to it, unless
// they are repeatable), its subcommands otherwise, the words its first
// argument may be where it says (completionArgs: the shells of
// "completion"), and nothing (file names, by the shell) where a flag's
// value or another argument is expected. app must have been through
// Prepare.
func Complete(app *cli.App, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	cmds, flags := visible(app.Commands), app.Flags
	var cmd *cli.Command         // the command named so far
	nargs := 0                   // its arguments so far
	given := map[cli.Flag]bool{} // its flags given so far
	helpMode := false            // after "help": the words name commands
	for i := 0; i < len(words)-1; i++ {
		w := words[i]
		if w == "--" {
			return nil // only arguments from here on
		}
		if len(w) > 1 && w[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if f := byName(flags, name); f != nil {
				given[f] = true
			}
			if !hasValue && takesValue(flags, name) {
				if i+1 == len(words)-1 {
					return nil // the word being typed is this flag's value
				}
				i++
			}
			continue
		}
		c := byName(cmds, w)
		if c == nil {
			cmds = nil // an argument: no subcommand follows it
			nargs++
			continue
		}
		if c.Name == "help" && !helpMode {
			helpMode = true
			cmds, flags = withoutHelp(visible(app.Commands)), nil
			continue
		}
		cmds = visible(c.Subcommands)
		if !helpMode {
			cmd, flags, nargs, given = c, c.Flags, 0, map[cli.Flag]bool{}
		}
	}
	var out []string
	if strings.HasPrefix(cur, "-") {
		if helpMode {
			return nil
		}
		seen := map[string]bool{}
		for _, f := range append(append([]cli.Flag{}, flags...), helpFlag()) {
			if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
				continue
			}
			if given[f] && !repeatable(f) {
				continue // said once already: the parser refuses it twice
			}
			for _, n := range f.Names() {
				s := "--" + n
				if len(n) == 1 {
					s = "-" + n
				}
				if !seen[s] && strings.HasPrefix(s, cur) {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
		return out
	}
	for _, c := range cmds {
		if strings.HasPrefix(c.Name, cur) {
			out = append(out, c.Name)
		}
	}
	if cmd != nil && !helpMode && nargs == 0 {
		for _, a := range completionArgs(app, cmd) {
			if strings.HasPrefix(a, cur) {
				out = append(out, a)
			}
		}
	}
	return out
}

// shells are the shells "completion" writes a script for, in the order
// its help names them.
var shells = [...]string{"bash", "zsh", "fish"}

// completionArgs returns the words the first argument of cmd may be, when
// it is one of a few fixed words (the shell of "completion"); nil when it
// is a file name or free text, which the shell completes.
func completionArgs(app *cli.App, cmd *cli.Command) []string {
	if cmd.Name == "completion" && byName(app.Commands, "completion") == cmd {
		return shells[:]
	}
	return nil
}

func visible(cmds []*cli.Command) []*cli.Command {
	var out []*cli.Command
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c)
		}
	}
	return out
}

func withoutHelp(cmds []*cli.Command) []*cli.Command {
	var out []*cli.Command
	for _, c := range cmds {
		if c.Name != "help" {
			out = append(out, c)
		}
	}
	return out
}

// helpFlag is the --help/-h flag of the program and of every command (a
// new value each time: urfave/cli's HelpFlag is package state).
func helpFlag() cli.Flag {
	return &cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show help", DisableDefaultText: true}
}

// unknownCommand is the usage error for a command name that cmds lack: it
// names what was typed (escaped and cut, as any text the program did not
// write) and the nearest command, when one is near.
func unknownCommand(typed string, cmds []*cli.Command) error {
	msg := `unknown command "` + sanitize(typed, maxTypedShown) + `"`
	if s := nearest(typed, visible(cmds)); s != "" {
		return Usagef("%s; did you mean %s?", msg, s)
	}
	return Usagef("%s", msg)
}

// nearest returns the name in cmds closest to typed by edit distance (the
// first of equals, in command order), when it is within a third of the
// longer name (rounded up), at least 1 and at most 3 edits; or the one name
// that begins with typed; or "".
func nearest(typed string, cmds []*cli.Command) string {
	names := make([][]string, 0, len(cmds))
	for _, c := range cmds {
		names = append(names, c.Names())
	}
	return nearestName(typed, names)
}

// nearestName is nearest over the names of things (commands or flags),
// each one's names with its own name first.
func nearestName(typed string, things [][]string) string {
	if typed == "" || len(typed) > 64 {
		return ""
	}
	best, bestD := "", 1<<30
	var prefixed []string
	for _, names := range things {
		for _, n := range names {
			if len(n) < 2 {
				continue // "h" is near every one-letter typo
			}
			if d := editDistance(typed, n); d < bestD {
				best, bestD = n, d
			}
			if strings.HasPrefix(n, typed) {
				prefixed = append(prefixed, names[0])
			}
		}
	}
	limit := (max(len(typed), len(best)) + 2) / 3
	limit = min(max(limit, 1), 3)
	if bestD <= limit {
		return best
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the optimal string alignment distance of a and b (the
// Levenshtein distance, with two swapped neighbours one edit: "trsut" is
// one from "trust"), in bytes (command names are ASCII).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// The completion scripts: each asks the program itself for the candidates
// ("PROG __complete WORD..."), so that they follow the program's commands
// and flags exactly; where it offers none (a flag's value, a file
// argument), the shell completes file names.
const bashCompletion = `# bash completion for %[1]s: source it, or put it in
# /etc/bash_completion.d/%[1]s
_%[2]s_complete() {
  local IFS=$'\n' cur="${COMP_WORDS[COMP_CWORD]}"
  COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:$COMP_CWORD}" 2>/dev/null)" -- "$cur"))
}
complete -o bashdefault -o default -F _%[2]s_complete %[1]s
`

const zshCompletion = `#compdef %[1]s
# zsh completion for %[1]s: put it in a directory of $fpath as _%[1]s, or
# source it after compinit.
_%[2]s() {
  local -a opts
  opts=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  opts=(${opts:#})
  if (( ${#opts} )); then
    compadd -- "${opts[@]}"
  else
    _files
  fi
}
if [[ "${funcstack[1]}" == "_%[2]s" ]]; then
  _%[2]s "$@"
else
  compdef _%[2]s %[1]s
fi
`

const fishCompletion = `# fish completion for %[1]s: put it in ~/.config/fish/completions/%[1]s.fish
function __%[2]s_complete
    set -l words (commandline -opc) (commandline -ct)
    $words[1] __complete $words[2..-1] 2>/dev/null
end
function __%[2]s_has_candidates
    set -l c (__%[2]s_complete)
    test (count $c) -gt 0
end
complete -c %[1]s -n __%[2]s_has_candidates -f -a '(__%[2]s_complete)'
`

// completionScript returns the script for shell, or "".
func completionScript(shell, name string) string {
	fn := strings.NewReplacer("-", "_", ".", "_").Replace(name)
	switch shell {
	case "bash":
		return fmt.Sprintf(bashCompletion, name, fn)
	case "zsh":
		return fmt.Sprintf(zshCompletion, name, fn)
	case "fish":
		return fmt.Sprintf(fishCompletion, name, fn)
	}
	return ""
}
