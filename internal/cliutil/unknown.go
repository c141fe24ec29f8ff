package cliutil

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// unknownCommandFirst is the usage error for the first word of args
// (without the program name) that should name a command (or a command of
// the group named before it) and does not, whatever flags come after it:
// "imprt x.ampb --db s.db" is an unknown command "imprt" with its
// suggestion, not a flag --db the program lacks. Flags before the word are
// stepped over (with their values); "--" ends the search, and so does a
// command without subcommands, or "help" after a group ("trust help add").
func unknownCommandFirst(app *cli.App, args []string) error {
	cmds, flags := app.Commands, app.Flags
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if len(a) > 1 && a[0] == '-' {
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			switch {
			case byName(flags, name) == nil && !builtinFlag(name) && name != "version" && name != "v":
				// A flag this level lacks: whether it takes a value is
				// unknown, so the next word may be its value, never
				// named as a command (it may be a secret); unknownFlag
				// names the flag.
				return nil
			case !hasValue && takesValue(flags, name):
				i++
			}
			continue
		}
		c := byName(cmds, a)
		if c == nil {
			if i > 0 && a == "help" {
				return nil // a group's own help: "trust help add"
			}
			return unknownCommand(a, cmds)
		}
		if len(c.Subcommands) == 0 {
			return nil
		}
		cmds, flags = c.Subcommands, c.Flags
	}
	return nil
}

// unknownFlag is the usage error for the first flag-like token of the
// invoked command's arguments that is none of its flags: it shows the flag
// as typed ("--dbb", escaped and cut) and the nearest flag of the command,
// when one is near ("unknown flag --dbb; did you mean --db?"), where
// urfave/cli would say "flag provided but not defined: -dbb". args must be
// normalized (Normalize).
func unknownFlag(app *cli.App, args []string) error {
	if len(args) == 0 {
		return nil
	}
	_, rest, flags := invoked(app, args[1:])
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		typed, _, hasValue := strings.Cut(a, "=")
		name := strings.TrimLeft(typed, "-")
		if byName(flags, name) != nil {
			if !hasValue && takesValue(flags, name) {
				i++
			}
			continue
		}
		if builtinFlag(name) {
			continue // urfave/cli's own, on every command
		}
		msg := "unknown flag " + sanitize(typed, maxTypedShown)
		var names [][]string
		for _, f := range flags {
			if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
				continue
			}
			names = append(names, f.Names())
		}
		if s := nearestName(name, names); s != "" {
			return Usagef("%s; did you mean --%s?", msg, s)
		}
		return Usagef("%s", msg)
	}
	return nil
}

// builtinFlag reports a flag urfave/cli adds to every command: help, and
// the completion flag.
func builtinFlag(name string) bool {
	switch name {
	case "help", "h", "generate-bash-completion":
		return true
	}
	return false
}
