package cliutil

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// Env is what a command may touch of the outside world. Tests replace every
// field; main uses OS().
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Now is the clock.
	Now func() time.Time
	// Rand is the CSPRNG.
	Rand io.Reader
	// Getenv reads an environment variable.
	Getenv func(string) string
	// StderrIsTerminal reports whether stderr is an interactive terminal
	// (progress bars are drawn only then).
	StderrIsTerminal bool
	// Signals, when set, delivers SIGINT/SIGTERM to long-running commands.
	Signals <-chan os.Signal
	// ReadPassword, when set, asks the user for a secret on the
	// controlling terminal, without echo. Nil when there is no terminal.
	ReadPassword func(prompt string) ([]byte, error)
}

// StopSignals returns the channel a long-running command stops on:
// Signals when set, else SIGINT and SIGTERM, taken from now on (call it
// before the command serves anything or prints that it started, so that a
// signal sent right then is a graceful stop, never the default action), and
// the function that stops taking them.
func (env *Env) StopSignals() (<-chan os.Signal, func()) {
	if env.Signals != nil {
		return env.Signals, func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// OS returns the environment of the running process.
func OS() *Env {
	return &Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Now: time.Now, Rand: rand.Reader, Getenv: os.Getenv,
		StderrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		ReadPassword:     terminalPassword(),
	}
}

// ExitInterrupted is the exit code of a command stopped by SIGINT or
// SIGTERM before it finished (128 + SIGINT, as a shell reports it).
const ExitInterrupted = 130

// interruptedError marks a command that a stop signal ended before it
// finished, having undone what it began (exit code ExitInterrupted).
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

// Interruptedf returns the error of a command that SIGINT or SIGTERM
// stopped: printed like a failure (with --json, code "interrupted"), exit
// code ExitInterrupted.
func Interruptedf(format string, args ...any) error {
	return &interruptedError{msg: fmt.Sprintf(format, args...)}
}

// IsInterrupted reports whether err is an Interruptedf error.
func IsInterrupted(err error) bool {
	var i *interruptedError
	return errors.As(err, &i)
}

// usageError marks a usage mistake (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Usagef returns a usage error: the command was called wrongly.
func Usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is a usage error.
func IsUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

// Failf returns a failure with a stable snake_case name and no AMP code.
func Failf(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}

// ErrorJSON is the error document of the CLI contract.
type ErrorJSON struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is the inside of ErrorJSON.
type ErrorBody struct {
	Code    string `json:"code"`
	AMPCode uint16 `json:"amp_code,omitempty"`
	Message string `json:"message"`
	// Details are the structured details of the error when it has any (a
	// schema violation's locations and keywords, also when a provider
	// sent them), as JSON.
	Details json.RawMessage `json:"details,omitempty"`
}

// ErrorDoc returns the error document for err.
func ErrorDoc(err error) ErrorJSON {
	var e *amp.Error
	if errors.As(err, &e) {
		// The message as sent, a peer's too: JSON output is not cut, and
		// PrintJSON escapes what a terminal would act on (docs/CLI.md §1.2);
		// SafeMessage, which escapes and cuts for the human form, only
		// where there is none (TRANSPORT-23).
		msg := e.Message
		if msg == "" {
			msg = amp.SafeMessage(e)
		}
		return ErrorJSON{ErrorBody{Code: string(amp.NameOf(e)), AMPCode: uint16(e.Code), Message: msg, Details: detailsJSON(e.Details)}}
	}
	if IsUsage(err) {
		return ErrorJSON{ErrorBody{Code: "usage", Message: err.Error()}}
	}
	if IsInterrupted(err) {
		return ErrorJSON{ErrorBody{Code: "interrupted", Message: err.Error()}}
	}
	return ErrorJSON{ErrorBody{Code: "error", Message: err.Error()}}
}

// detailsJSON renders error details as JSON: CBOR details (as received from
// a peer) through amp.JSONValue, anything else through encoding/json. Nil
// when there are none or they do not convert.
func detailsJSON(d any) json.RawMessage {
	var j json.RawMessage
	var err error
	switch v := d.(type) {
	case nil:
		return nil
	case cbor.RawMessage:
		j, err = amp.JSONValue(v)
	default:
		j, err = json.Marshal(v)
	}
	if err != nil {
		return nil
	}
	return j
}

// humanError is the text printed on stderr for err: the message, and the
// causes when they add something (a file name, an OS error). A cause that
// is itself an *amp.Error adds its message only, never its error name, and
// not at all when it repeats the message before it
// ("cannot read the config file: open x: no such file", not
// "cannot read the config file: io_error: cannot read the config file: ...").
// Messages and causes may carry a peer's or a file's text (a provider's
// ERROR message, a mirror document's key): each is shown through Sanitize.
func humanError(err error) string {
	var e *amp.Error
	if !errors.As(err, &e) {
		return Sanitize(err.Error())
	}
	s := Sanitize(amp.SafeMessage(e))
	if e.Code != 0 {
		s = fmt.Sprintf("%s (amp %d %s)", s, uint16(e.Code), e.Code.Name())
	}
	last := e.Message
	for cause := e.Err; cause != nil; {
		ce, ok := cause.(*amp.Error)
		if !ok {
			if !repeats(s, Sanitize(cause.Error())) {
				s += ": " + Sanitize(cause.Error())
			}
			break
		}
		if ce.Message != "" && ce.Message != last && !strings.Contains(s, Sanitize(ce.Message)) {
			s += ": " + Sanitize(ce.Message)
			last = ce.Message
		}
		cause = ce.Err
	}
	return s
}

// repeats reports whether the cause text c only says again what the
// message s says: s holds it whole, or holds its last part (after its last
// ": "), which is what the cause ends by saying ("…: not found" after
// "not found", a limit's reason after the same reason).
func repeats(s, c string) bool {
	if strings.Contains(s, c) {
		return true
	}
	i := strings.LastIndex(c, ": ")
	return i >= 0 && len(c)-i-2 >= 8 && strings.HasSuffix(s, c[i+2:])
}

// hinted is an error with a hint for humans ("did you forget --trust?").
type hinted struct {
	error
	hint string
}

func (h hinted) Unwrap() error { return h.error }

// WithHint attaches a hint shown after the error in human output.
func WithHint(err error, hint string) error { return hinted{err, hint} }

// MarshalJSON is json.Marshal without HTML escaping ("<" stays "<"), as
// PrintJSON prints.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// PrintJSON writes v as one JSON document (indented) and a newline,
// through SanitizeJSON: the runes encoding/json leaves as they are but a
// terminal may act on (DEL, C1 and bidi controls, which a peer's text may
// carry) are \uHHHH escapes, which every JSON reader reads back as the
// same string. --json output is often read on a terminal too.
func PrintJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, SanitizeJSON(b.Bytes()))
	return err
}

// Normalize reorders the arguments of the command being invoked so that its
// flags come before its positional arguments: urfave/cli v2 stops parsing
// flags at the first positional argument and would otherwise treat a later
// "--flag" as an argument without any error (urfave/cli#1177). Arguments
// after "--" are left alone. A token that looks like a flag but is not one
// of the command's flags is moved with the flags, so that parsing refuses
// it (a usage error) instead of taking it as an argument.
func Normalize(app *cli.App, args []string) []string {
	if len(args) == 0 {
		return args
	}
	path, rest, flags := invoked(app, args[1:])
	out := append([]string{args[0]}, path...)
	var flagArgs, positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flagArgs = append(flagArgs, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue(flags, name) && i+1 < len(rest) {
			i++
			flagArgs = append(flagArgs, rest[i])
		}
	}
	out = append(out, flagArgs...)
	return append(out, positional...)
}

// RepeatedFlag refuses a flag given more than once when it takes one
// value: urfave/cli would silently keep the last one ("build --key a --key
// b" signing with b only). Slice flags (--scope, --key of build) are
// repeatable by design, and a bare boolean switch may be repeated (it
// cannot mean two things), but not next to an explicit "--flag=false".
// args must be normalized (Normalize).
func RepeatedFlag(app *cli.App, args []string) error {
	if len(args) == 0 {
		return nil
	}
	_, rest, flags := invoked(app, args[1:])
	seen := map[cli.Flag]string{}
	explicit := map[cli.Flag]bool{} // a switch given as --flag=VALUE
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := byName(flags, name)
		if f == nil {
			continue // unknown: the parser refuses it
		}
		if !hasValue && takesValue(flags, name) {
			i++
		}
		if repeatable(f) {
			continue
		}
		// A bare boolean switch said twice means the same thing twice;
		// "--json --json=false" is a contradiction and refused, and so
		// is "--json=false --json", in either order.
		if _, isBool := f.(*cli.BoolFlag); isBool && !hasValue {
			if prev, dup := seen[f]; !dup {
				seen[f] = name
			} else if explicit[f] {
				return boolTwice(prev, name)
			}
			continue
		}
		if _, isBool := f.(*cli.BoolFlag); isBool {
			if prev, dup := seen[f]; dup {
				return boolTwice(prev, name)
			}
			explicit[f] = true
		}
		if prev, dup := seen[f]; dup {
			if prev == name {
				return Usagef("flag --%s is given more than once; it takes one value", name)
			}
			return Usagef("flags --%s and --%s are the same flag; give it once", prev, name)
		}
		seen[f] = name
	}
	return nil
}

// boolTwice is the usage error of a switch given twice, once with a
// value (--json --json=false, or the other way round).
func boolTwice(prev, name string) error {
	if prev == name {
		return Usagef("flag --%s is given more than once, once with a value; give it once", name)
	}
	return Usagef("flags --%s and --%s are the same flag, once with a value; give it once", prev, name)
}

// repeatable reports whether a flag collects several values.
func repeatable(f cli.Flag) bool {
	switch f.(type) {
	case *cli.StringSliceFlag, *cli.IntSliceFlag, *cli.Int64SliceFlag, *cli.UintSliceFlag,
		*cli.Uint64SliceFlag, *cli.Float64SliceFlag:
		return true
	}
	return false
}

// invoked walks args (without the program name) down the command path to
// the command being invoked: the words that name it, the arguments after
// them, and its flags (the app's when args name no command).
func invoked(app *cli.App, args []string) (path, rest []string, flags []cli.Flag) {
	cmds, flags := app.Commands, app.Flags
	n := 0
	for n < len(args) {
		c := byName(cmds, args[n])
		if c == nil {
			break
		}
		n++
		cmds, flags = c.Subcommands, c.Flags
		if len(c.Subcommands) == 0 {
			break
		}
	}
	return args[:n], args[n:], flags
}

// byName returns the first of xs (flags or commands) that name is a name
// of, or nil.
func byName[T interface{ Names() []string }](xs []T, name string) T {
	for _, x := range xs {
		if slices.Contains(x.Names(), name) {
			return x
		}
	}
	var none T
	return none
}

func takesValue(flags []cli.Flag, name string) bool {
	f := byName(flags, name)
	if f == nil {
		return false // unknown flags (and -h/--help) take no value
	}
	d, ok := f.(cli.DocGenerationFlag)
	return !ok || d.TakesValue()
}

// Main is a program's main: it runs the app newApp builds with the
// process's Env and arguments (Run), and exits with its code.
func Main(newApp func(*Env) *cli.App) {
	env := OS()
	os.Exit(Run(context.Background(), newApp(env), env, os.Args))
}

// Run runs app with args under the CLI contract and returns the exit code.
func Run(ctx context.Context, app *cli.App, env *Env, args []string) int {
	Prepare(app, env)
	if len(args) > 1 && args[1] == CompleteCommand {
		// Shell completion (the scripts of "completion SHELL").
		for _, s := range Complete(app, args[2:]) {
			fmt.Fprintln(env.Stdout, s)
		}
		return 0
	}
	if len(args) > 1 && args[len(args)-1] == "--generate-bash-completion" {
		// The request of a script an older version printed: the words,
		// and the word being typed only when it is a flag.
		words := args[1 : len(args)-1]
		if len(words) == 0 || !strings.HasPrefix(words[len(words)-1], "-") {
			words = append(words[:len(words):len(words)], "")
		}
		for _, s := range Complete(app, words) {
			fmt.Fprintln(env.Stdout, s)
		}
		return 0
	}
	// An unknown command is named first, whatever flags follow it.
	err := unknownCommandFirst(app, args[1:])
	args = Normalize(app, args)
	jsonMode := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "-json" || a == "--json=true" {
			jsonMode = true
		}
	}
	// An unknown flag, or one given twice, is a usage error before the
	// command runs.
	if err == nil {
		err = unknownFlag(app, args)
	}
	if err == nil {
		err = RepeatedFlag(app, args)
	}
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	if err == nil {
		return 0
	}
	var status ExitStatus
	if errors.As(err, &status) {
		return int(status)
	}
	code := 1
	switch {
	case IsUsage(err):
		code = 2
	case IsInterrupted(err):
		code = ExitInterrupted
	}
	if jsonMode {
		_ = PrintJSON(env.Stdout, ErrorDoc(err))
	}
	if !jsonMode || code == 2 {
		fmt.Fprintf(env.Stderr, "%s: %s\n", app.Name, humanError(err))
		var h hinted
		if errors.As(err, &h) {
			fmt.Fprintf(env.Stderr, "hint: %s\n", Sanitize(h.hint))
		}
		if code == 2 {
			fmt.Fprintf(env.Stderr, "run '%s --help' for usage\n", strings.Join(commandPath(app, args), " "))
		}
	}
	return code
}

// commandPath returns the program name and the command names in args.
func commandPath(app *cli.App, args []string) []string {
	out := []string{app.Name}
	cmds := app.Commands
	for i, a := range args[1:] {
		c := byName(cmds, a)
		if c == nil {
			break
		}
		if i == 0 && c.Name == "help" {
			// "help trust nosuch": the usage to read is that of
			// "trust", not of the help command.
			continue
		}
		out = append(out, a)
		cmds = c.Subcommands
	}
	return out
}

// JSONFlag returns the --json flag of every command of both tools.
func JSONFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout (errors too)"}
}

// Group is a command that only groups its subcommands: given none, or one
// it does not have, it is a usage error (Prepare), and "NAME help [SUB]"
// prints their help.
func Group(name, usage string, subs ...*cli.Command) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, Subcommands: subs}
}

// Require checks that each named flag was given (urfave/cli reports its own
// Required flags as plain errors, not as usage errors, so commands use this
// instead).
func Require(c *cli.Context, names ...string) error {
	for _, n := range names {
		if !c.IsSet(n) {
			return Usagef("missing required flag --%s", n)
		}
	}
	return nil
}

// ExactArgs checks the number of positional arguments.
func ExactArgs(c *cli.Context, n int, names string) error {
	if c.NArg() != n {
		return Usagef("expected %s, got %d argument(s)", names, c.NArg())
	}
	return nil
}

// ReadFile reads a small file the user named (a config, a DID document),
// refusing one over max bytes with limit_exceeded without reading it all.
// what names the file in errors. The name may lead to a regular file or
// to a pipe (a FIFO, a process substitution), read within PipeWait; a
// device or anything else is io_error, never opened (readNamed).
func ReadFile(path string, max int64, what string) ([]byte, error) {
	return readFileChecked(path, max, what, nil, PipeWait)
}

// readFileChecked is ReadFile that calls check, when not nil, with the
// file opened and its FileInfo (from the open file) before anything is
// read: an error check returns is returned as it is, and nothing is read.
// A pipe must end within wait (PipeWait; a test's own, shorter).
func readFileChecked(path string, max int64, what string, check func(*os.File, fs.FileInfo) error, wait time.Duration) ([]byte, error) {
	data, err := readNamed(path, max, check, wait)
	if err != nil {
		return nil, namedErr(err, "the "+what, "cannot read the "+what, "", wait)
	}
	if int64(len(data)) > max {
		return nil, Failf("limit_exceeded", "the %s is larger than %d bytes", what, max)
	}
	return data, nil
}

// ReadInput reads the named file, or stdin for "-", up to max bytes. With
// asHex the content is hex text (whitespace ignored) of up to max bytes:
// the hex of more is limit_exceeded. A name is read as
// ReadFile reads one (readNamed); stdin is read as it comes, without a
// time bound: it is the operator's own plumbing.
func ReadInput(env *Env, name string, max int64, asHex bool) ([]byte, error) {
	return readInput(env, name, max, asHex, PipeWait)
}

// readInput is ReadInput with a named pipe given wait (PipeWait; a
// test's own, shorter) to end.
func readInput(env *Env, name string, max int64, asHex bool, wait time.Duration) ([]byte, error) {
	limit := max
	if asHex {
		limit = 2*max + 4096
	}
	var data []byte
	var err error
	if name == "-" || namesStdin(env, name) {
		if data, err = io.ReadAll(io.LimitReader(env.Stdin, limit+1)); err != nil {
			return nil, Failf("io_error", "cannot read input").WithCause(err)
		}
	} else if data, err = readNamed(name, limit, nil, wait); err != nil {
		return nil, namedErr(err, "the input", "cannot open input",
			"give a slow writer's output on standard input (-), which is read without a time bound", wait)
	}
	if int64(len(data)) > limit {
		return nil, amp.Named(amp.CodeInvalidMessage, "limit_exceeded", "input is larger than %d bytes", max)
	}
	if !asHex {
		return data, nil
	}
	digits := dropSpace(data)
	if int64(hex.DecodedLen(len(digits))) > max {
		// The read's bound leaves room for white space: the bytes the
		// digits stand for are bounded here (docs/SPEC-DECISIONS.md,
		// CLI-85).
		return nil, amp.Named(amp.CodeInvalidMessage, "limit_exceeded", "input is larger than %d bytes", max)
	}
	out := make([]byte, hex.DecodedLen(len(digits)))
	if _, err := hex.Decode(out, digits); err != nil {
		return nil, amp.Named(amp.CodeInvalidMessage, "invalid_hex", "input is not hex text")
	}
	return out, nil
}

// namesStdin reports whether name leads to the command's own standard
// input (/dev/stdin, /dev/fd/0 on a terminal or a socket, which the
// one-shot rule of readNamed would refuse as a device): it is read as "-"
// is. Only a stat is made; nothing is opened.
func namesStdin(env *Env, name string) bool {
	f, ok := env.Stdin.(*os.File)
	if !ok {
		return false
	}
	in, err := f.Stat()
	if err != nil {
		return false
	}
	st, err := os.Stat(name)
	return err == nil && os.SameFile(in, st)
}

// dropSpace removes from b, in place, the white space strings.Fields
// splits at (unicode.IsSpace), and returns what is
// left. Joining strings.Fields' words cost a 16-byte string header a word:
// hex input of one digit a word ("0 0 0 …", 32 MiB at --hex's bound) made
// 256 MiB of headers and 312 MiB of allocations in all (CLI-58).
func dropSpace(b []byte) []byte {
	n := 0
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if !unicode.IsSpace(r) { // U+FFFD, an invalid byte's rune, is none
			n += copy(b[n:], b[i:i+size])
		}
		i += size
	}
	return b[:n]
}

// PipeWait bounds the time a pipe named as a one-shot input (a FIFO, a
// process substitution <(…), /dev/stdin on a pipe) may take, from its
// open, which waits for a writer, to its end: a FIFO put where a file was
// expected, with no writer or one that trickles, must not hold a command
// for ever. Standard input ("-") has no such bound (docs/SPEC-DECISIONS.md,
// CLI-57). Tests give readNamed's callers a shorter wait of their own
// (STYLE-2).
const PipeWait = 60 * time.Second

// errPipeWait: a pipe named as an input did not end within its wait.
var errPipeWait = errors.New("the pipe did not end in time")

// errOpenWait: a name given as an input did not open within its wait.
var errOpenWait = errors.New("the input did not open in time")

// readError is a failure of readNamed after the file was opened.
type readError struct{ error }

func (e readError) Unwrap() error { return e.error }

// refusedError is the refusal of readNamed's check: returned as it is.
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }

// readNamed reads at most limit+1 bytes of the file path names (the
// caller judges the size), which must be a regular file or a pipe
// (regfile.OpenStream: anything else is regfile.ErrNotRegular and never
// opened). The open and the reads run in a goroutine; a pipe's must end
// within wait (PipeWait), else errPipeWait, and the goroutine is left waiting in
// the open or a read (a pipe cannot be woken portably), holding at most
// limit+1 bytes, until a writer comes or goes or the process ends: every
// caller is a one-shot command, or a start that fails on the error. A
// failure to read what was opened is a readError. check, when not nil,
// judges the open file and its FileInfo before anything is read; its
// refusal is a refusedError, and nothing is read.
func readNamed(path string, limit int64, check func(*os.File, fs.FileInfo) error, wait time.Duration) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	pipe := make(chan bool, 1)
	done := make(chan read, 1)
	go func() {
		f, st, err := regfile.OpenStream(path)
		if err != nil {
			done <- read{err: err}
			return
		}
		defer f.Close()
		if check != nil {
			if err := check(f, st); err != nil {
				done <- read{err: refusedError{err}}
				return
			}
		}
		pipe <- !st.Mode().IsRegular()
		data, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err != nil {
			err = readError{err}
		}
		done <- read{data: data, err: err}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var r read
	select {
	case r = <-done:
	case isPipe := <-pipe:
		if !isPipe {
			r = <-done
			break
		}
		select {
		case r = <-done:
		case <-timer.C:
			return nil, errPipeWait
		}
	case <-timer.C:
		return nil, errOpenWait // a FIFO without a writer, a hung mount
	}
	return r.data, r.err
}

// namedErr names a failure of readNamed: io_error, saying what (for
// "the input", "the did document") was refused or could not be opened
// (openMsg) or read; hint, when not empty, is shown after a pipe that
// did not end in time; wait is the time it was given.
func namedErr(err error, what, openMsg, hint string, wait time.Duration) error {
	var re readError
	var rf refusedError
	switch {
	case errors.As(err, &rf):
		return rf.error
	case errors.Is(err, regfile.ErrNotRegular):
		return Failf("io_error", "%s is not a regular file or a pipe", what)
	case errors.Is(err, errPipeWait), errors.Is(err, errOpenWait):
		e := Failf("io_error", "%s is a pipe that did not end within %s", what, wait)
		if errors.Is(err, errOpenWait) {
			e = Failf("io_error", "%s did not open within %s (a pipe no one writes to, or an unanswering mount)", what, wait)
		}
		if hint == "" {
			return e
		}
		return WithHint(e, hint)
	case errors.As(err, &re):
		return Failf("io_error", "cannot read %s", what).WithCause(re.error)
	}
	return Failf("io_error", "%s", openMsg).WithCause(err)
}

// DecodeHexN decodes a hex flag value of exactly n bytes.
func DecodeHexN(flag, s string, n int) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != n {
		return nil, Usagef("--%s must be %d bytes of hex", flag, n)
	}
	return b, nil
}

// Loopback reports whether the listen address addr ("host:port") listens
// only on a loopback interface ("localhost", 127.0.0.0/8, ::1).
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ExitStatus, returned by a command, ends it with that exit code and
// prints nothing more: the command has already printed its result. It is
// for commands whose successful outcomes differ in a way scripts and
// timers branch on (ampbundle sync); failures stay errors (exit 1).
type ExitStatus int

func (e ExitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }
