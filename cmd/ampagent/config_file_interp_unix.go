//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// maxShebangLine bounds what is read of a program to find its #! line:
// the line, its newline included, must be within the first 128 bytes,
// all of it that Linux before 5.1 reads (BINPRM_BUF_SIZE, 256 since):
// past them a kernel cuts the line, and a cut interpreter's name is
// another file (CLI-72).
const maxShebangLine = 128

// maxInterpreters bounds the #! lines followed from one handler's
// program (Linux runs at most 4 binfmt rewrites, fs/exec.c's
// exec_binprm in the kernel's source): a script naming itself is
// refused, not followed for ever.
const maxInterpreters = 4

// interpHint is the start's hint for a #! line the agent cannot follow.
const interpHint = "name the interpreter on the program's #! line by its absolute path (#!/usr/bin/python3), in folders only root or the agent's user may write"

// maxJudgedFiles bounds the files programWriters judges for one handler
// (the program, its interpreters, each file env may run, the files after
// the first in PATH included, and each other place env looks in PATH):
// with env on the lines, each of PATH's folders could lead on to another
// line, so the files grow as PATH's folders to the power of the lines
// (CLI-75). A handler's four lines through env, each looked up in a PATH
// of 40 folders, judge about 170.
const maxJudgedFiles = 256

// programWriters refuses a handler's program (path: absolute, as
// lookProgram found it) that another user than the agent's or root
// could rewrite or replace (pathWriters), or whose #! line names an
// interpreter they could, which the system runs with the program as its
// argument: a script of the agent's user run by another user's
// interpreter runs their code (CLI-72). Each interpreter is judged as
// the program, its own #! line too. For env (#!/usr/bin/env NAME, or a
// link whose target is named env, isEnv) each file env may run is
// judged too, as an interpreter: every file of that name execvp(3) may
// run in envPATH (the PATH the program is given), the first and those
// after it (execvp goes on past a file that fails to run), and every
// other place in PATH where another user could put NAME. A #! line the
// agent cannot follow to the files the system may run is refused:
// longer than maxShebangLine, a relative interpreter, env with options,
// a variable or a relative name, an empty PATH or one with a relative
// folder, more than maxInterpreters lines deep, more than maxJudgedFiles
// files to judge in all (CLI-72, CLI-75, CLI-76). A program that is env
// itself (isEnv) has the program its words name (args: the command's
// words after the program) judged as that #! line's NAME is
// (envCommand, CLI-80). m tells the host's mounts (hostMounts, CLI-78,
// CLI-81).
func programWriters(m mountProbe, path string, args []string, envPATH string) error {
	c := programCheck{mounts: m, envPATH: envPATH}
	real, err := c.judgeRun(path, path, path, maxInterpreters)
	if err != nil || !isEnv(path, real) {
		return err
	}
	return c.envCommand(path, args)
}

// programCheck is one handler's programWriters: what it judges by, and
// the files it has followed so far.
type programCheck struct {
	mounts  mountProbe // how the host's mounts are told (pathWriters)
	envPATH string     // the program's PATH, where env looks
	files   int        // the files judged so far, at most maxJudgedFiles
}

// judging counts one more file to judge for program, refused past
// maxJudgedFiles.
func (c *programCheck) judging(program string) error {
	if c.files++; c.files > maxJudgedFiles {
		return &exposedProgramError{msg: fmt.Sprintf("program %s: its #! lines, and the places env looks for the programs they name, lead to more than %d files to judge", program, maxJudgedFiles), hint: interpHint}
	}
	return nil
}

// judgeRun judges p, a file the system runs for program (the program,
// or an interpreter on its way, label naming it in a refusal), then what
// p's #! line has it run, with left #! lines still allowed below p. It
// returns the path the walk resolved p to (pathWriters; "" where p is
// missing), for isEnv.
func (c *programCheck) judgeRun(program, label, p string, left int) (real string, err error) {
	if err := c.judging(program); err != nil {
		return "", err
	}
	if real, err = pathWriters(c.mounts, label, p); err != nil {
		return "", err
	}
	interp, arg, err := shebang(label, p)
	if err != nil || interp == "" {
		return real, err
	}
	if left == 0 {
		return "", &exposedProgramError{msg: fmt.Sprintf("program %s runs through more than %d #! lines", program, maxInterpreters), hint: interpHint}
	}
	if !strings.HasPrefix(interp, "/") {
		return "", &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s names an interpreter by a relative path, which the system finds from the program's working directory", program, p), hint: interpHint}
	}
	interpReal, err := c.judgeRun(program, program+"'s interpreter "+interp, interp, left-1)
	if err != nil || !isEnv(interp, interpReal) {
		return real, err
	}
	return real, c.envPrograms(program, p, arg, left-1)
}

// isEnv reports whether interp (judged by pathWriters, which resolved it
// to real, "" where it is missing) runs env: its name is env, or it is a
// link whose target, links followed, is named env. GNU env runs as env
// under any name the kernel gives it (its argv[0] is not read), so
// "#!/opt/bin/e NAME", e a link to /usr/bin/env, has it look NAME up in
// PATH as "#!/usr/bin/env NAME" does (CLI-76). The target is the one the
// judged walk reached (regfile.Walk), not a second resolution of its own
// that could reach another file (CLI-92). A multi-call binary (busybox)
// reached through a link of another name is not env: it picks its
// applet by that name.
func isEnv(interp, real string) bool {
	return path.Base(interp) == "env" || real != "" && path.Base(real) == "env"
}

// shebang returns the interpreter and its argument that the #! line of
// p (a file pathWriters judged: only the agent's user or root writes it)
// names, read as Linux's load_script reads it (fs/binfmt_script.c): the
// line ends at its newline or a NUL, the interpreter is its first word
// after "#!" (spaces and tabs around it), the argument the rest, trailing
// spaces and tabs cut. interp is empty where the system runs no
// interpreter: no #! line, or p missing or not a regular file (the
// program is then missing, checkProgram). A file the agent cannot read
// is refused: the system reads its #! line all the same.
func shebang(label, p string) (interp, arg string, err error) {
	f, _, err := regfile.Open(p, regfile.FollowLinks)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, regfile.ErrNotRegular):
		return "", "", nil
	case err != nil:
		return "", "", unreadableProgram(label)
	}
	defer f.Close()
	buf := make([]byte, maxShebangLine)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", "", unreadableProgram(label)
	}
	if !bytes.HasPrefix(buf[:n], []byte("#!")) {
		return "", "", nil
	}
	line, _, ended := bytes.Cut(buf[2:n], []byte{'\n'})
	if !ended && n == maxShebangLine {
		return "", "", &exposedProgramError{msg: fmt.Sprintf("program %s: its #! line is longer than %d bytes, which a kernel cuts", label, maxShebangLine-1), hint: interpHint}
	}
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	s := strings.Trim(string(line), " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, "", nil
	}
	return s[:i], strings.TrimLeft(s[i+1:], " \t"), nil
}

// unreadableProgram refuses program label, which the agent's user may
// not read: execve(2) needs only the execute bit, and the kernel reads
// the #! line of an execute-only file (mode 0711) and runs the
// interpreter it names, so the agent must read that line too to judge
// that interpreter (CLI-72).
func unreadableProgram(label string) error {
	return &exposedProgramError{msg: fmt.Sprintf("program %s cannot be read by the agent's user, yet the kernel reads the #! line of a file it may only execute (mode 0711) and runs the interpreter named there: the agent must read that line too, to judge that interpreter", label),
		hint: "make the program readable by the agent's user (chmod u+r, or a+r if another user owns it)"}
}

// envPrograms judges what env runs for script's #! line "#!…/env arg"
// given PATH c.envPATH (envLookup). Nothing is judged when env runs the
// script itself (no word): env is given script's path, absolute, first,
// and runs it, unless that path holds '=', which env takes for an
// assignment, running the program's next word instead (CLI-82). What env
// would read as an option, a variable or more words is refused: the
// file they lead to is not told here.
func (c *programCheck) envPrograms(program, script, arg string, left int) error {
	switch {
	case arg == "" && strings.Contains(script, "="):
		return &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s has env run it, yet its path holds '=', which env takes for a variable, running the word after it instead", program, script), hint: interpHint}
	case arg == "":
		return nil
	case strings.HasPrefix(arg, "-") || strings.ContainsAny(arg, " \t="):
		return &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s gives env options, a variable or more than one word (%q), which the agent does not follow to the program env runs", program, script, arg), hint: interpHint}
	}
	return c.envLookup(program, "the #! line of "+script, arg, c.envPATH, left)
}

// envCommand judges what env runs for a handler whose program is env
// itself (program: env, or a link whose target is named env, isEnv;
// args: the command's words after it): the word envArgs finds, looked
// up as a #! line's NAME is (envLookup), in the PATH env is left with,
// the lines left below it those of "#!/usr/bin/env NAME". env's other
// words (the program's arguments) are not judged (CLI-74). A PATH env
// leaves unset (-i or -u PATH, no PATH= after) is refused for a name
// without '/': execvp then searches its C library's own list of
// folders (CLI-80).
func (c *programCheck) envCommand(program string, args []string) error {
	name, envPATH, unset, err := envArgs(program, args, c.envPATH)
	switch {
	case err != nil || name == "":
		return err // no name: env prints its environment, runs nothing
	case unset && !strings.Contains(name, "/"):
		return &exposedProgramError{msg: fmt.Sprintf("program %s: its command has env find %q with PATH unset (env -i or -u PATH, and no PATH= after), where execvp searches a list of folders its C library chooses (glibc's /bin:/usr/bin, musl's /usr/local/bin:/bin:/usr/bin)", program, name),
			hint: envCommandHint}
	}
	return c.envLookup(program, envCommandFrom, name, envPATH, maxInterpreters-1)
}

// envCommandFrom says, in a refusal, that env's words are the handler's
// command's (envCommand), not a #! line's.
const envCommandFrom = "its command"

// envCommandHint is the start's hint for an env command the agent does
// not read (envArgs, envCommand).
const envCommandHint = "make the program env runs the handler's command, by its absolute path ([\"/usr/bin/python3\", \"t.py\"]), or give env only -i, -u NAME, -- and NAME=value (PATH=/usr/bin:/bin among them) before the program's name"

// envArgs reads env's words (args) as GNU's and busybox's env read them:
// options up to the first word that is not one ("--" ends them), a
// lone "-" there (-i), then assignments (each word holding '=', also after "--"), then the word
// env runs with execvp(3), its arguments after it. It returns that word
// (empty: there is none, and env prints its environment), the PATH env
// looks in (inherited, unless an assignment sets it) and whether PATH
// is unset (-i, or -u PATH, with no assignment of PATH after). Only -i,
// -u NAME and -- are read: any other option (-S's splitting and
// escapes, -C's folder, long and joined options, "-") is refused, as is
// an assignment with no name (env fails it), since the program they
// lead to is not told here (CLI-80).
func envArgs(program string, args []string, inherited string) (name, envPATH string, unset bool, err error) {
	envPATH = inherited
	i := 0
options:
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			i++
			break options
		case a == "-i":
			unset = true
		case a == "-u" && i+1 < len(args):
			i++
			unset = unset || args[i] == "PATH"
		case strings.HasPrefix(a, "-"):
			return "", "", false, &exposedProgramError{msg: fmt.Sprintf("program %s: its command gives the env option %q, which the agent does not read to tell the program env runs", program, a), hint: envCommandHint}
		default:
			break options
		}
	}
	// A lone "-" where the options end (after "--" too) is -i to GNU's
	// and busybox's env, not the program's name.
	if i < len(args) && args[i] == "-" {
		unset = true
		i++
	}
	for ; i < len(args) && strings.Contains(args[i], "="); i++ {
		k, v, _ := strings.Cut(args[i], "=")
		switch k {
		case "":
			return "", "", false, &exposedProgramError{msg: fmt.Sprintf("program %s: its command gives env the assignment %q, of no name, which env refuses", program, args[i]), hint: envCommandHint}
		case "PATH":
			envPATH, unset = v, false
		}
	}
	if i < len(args) {
		name = args[i]
	}
	return name, envPATH, unset, nil
}

// envLookup judges what env runs for name, a word from (a #! line, or
// the handler's command, envCommandFrom) has it run, given PATH envPATH:
// an absolute name is judged as an interpreter (judgeRun); otherwise env
// execs it with execvp(3), which tries each folder of PATH in turn and
// runs the first file there of that name the agent's user may execute
// (access(2), X_OK; the agent is not set-user-ID); glibc's and musl's
// execvp go on to the next folder when the exec of that file fails with
// ENOENT, EACCES, ENOTDIR, ESTALE, ENODEV or ETIMEDOUT (a script whose
// interpreter is missing or not executable, a binary whose loader is
// missing), so any later file of that name it may execute may run in
// its place (CLI-75). Each such file is judged as an interpreter
// (judgeRun: its folders, then its own #! chain, left lines below it),
// every other place in PATH as a missing program is (pathWriters):
// another user who may create the name there runs in its place. A
// relative name, an empty PATH and a PATH holding a relative folder
// (empty: the working directory) are refused: the file they lead to is
// not told here.
func (c *programCheck) envLookup(program, from, name, envPATH string, left int) error {
	via, givers, hint := "'s interpreter ", "neither the agent's environment nor the handler's \"env\" gives it a folder", interpHint
	if from == envCommandFrom {
		via, givers, hint = "'s command ", "neither the agent's environment, the handler's \"env\" nor a PATH= on the command gives it a folder", envCommandHint
	}
	switch {
	case strings.HasPrefix(name, "/"):
		_, err := c.judgeRun(program, program+via+name, name, left)
		return err
	case strings.Contains(name, "/"):
		return &exposedProgramError{msg: fmt.Sprintf("program %s: %s has env run %q, a relative path, which env finds from the program's working directory", program, from, name), hint: hint}
	case envPATH == "":
		// runProgram gives PATH= when the agent has none: env then
		// searches the working directory.
		return &exposedProgramError{msg: fmt.Sprintf("program %s: %s has env find %q in PATH, which is empty (%s), so env searches the program's working directory", program, from, name, givers),
			hint: "give PATH absolute folders (PATH=/usr/bin:/bin in the handler's \"env\", or in the agent's environment), or " + hint}
	}
	for _, dir := range strings.Split(envPATH, ":") {
		if !strings.HasPrefix(dir, "/") {
			return &exposedProgramError{msg: fmt.Sprintf("program %s: %s has env find %q in PATH, which holds a folder that is not absolute (%q), searched from the program's working directory", program, from, name, dir),
				hint: "give PATH only absolute folders (the agent's, or the handler's \"env\"), or " + hint}
		}
		cand := dir + "/" + name
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && unix.Access(cand, unix.X_OK) == nil {
			if _, err := c.judgeRun(program, program+via+cand, cand, left); err != nil {
				return err
			}
			continue
		}
		if err := c.judging(program); err != nil {
			return err
		}
		if _, err := pathWriters(c.mounts, program+via+cand, cand); err != nil {
			return err
		}
	}
	return nil
}
