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

// programWriters refuses a handler's program (path: absolute, as
// lookProgram found it) that another user than the agent's or root
// could rewrite or replace (pathWriters), or whose #! line names an
// interpreter they could, which the system runs with the program as its
// argument: a script of the agent's user run by another user's
// interpreter runs their code (CLI-72). Each interpreter is judged as
// the program, its own #! line too. For env (#!/usr/bin/env NAME) the
// program env runs is judged too: the file execvp(3) finds for NAME in
// envPATH (the PATH the program is given) and every other place in PATH
// where another user could put NAME (execvp goes on past a file that
// fails to run). A #! line the agent cannot
// follow to the one file the system runs is refused: longer than
// maxShebangLine, a relative interpreter, env with options, a variable
// or a relative name, an empty PATH or one with a relative folder.
func programWriters(path, envPATH string) error {
	left := maxInterpreters
	return judgeRun(path, path, envPATH, &left)
}

// judgeRun judges p, a file the system runs for program (the program,
// or an interpreter on its way), then what p's #! line has it run.
func judgeRun(program, p, envPATH string, left *int) error {
	label := program
	if p != program {
		label = program + "'s interpreter " + p
	}
	if err := pathWriters(label, p); err != nil {
		return err
	}
	interp, arg, err := shebang(label, p)
	if err != nil || interp == "" {
		return err
	}
	if *left == 0 {
		return &exposedProgramError{msg: fmt.Sprintf("program %s runs through more than %d #! lines", program, maxInterpreters), hint: interpHint}
	}
	*left--
	if !strings.HasPrefix(interp, "/") {
		return &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s names an interpreter by a relative path, which the system finds from the program's working directory", program, p), hint: interpHint}
	}
	if err := judgeRun(program, interp, envPATH, left); err != nil {
		return err
	}
	if path.Base(interp) != "env" {
		return nil
	}
	next, err := envProgram(program, p, arg, envPATH)
	if err != nil || next == "" {
		return err
	}
	return judgeRun(program, next, envPATH, left)
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

// envProgram returns the file env runs for script's #! line "#!…/env
// arg" given PATH envPATH: env execs its first word with execvp(3),
// which tries each folder of PATH in turn and runs the first file there
// of that name the agent's user may execute (access(2), X_OK; the agent
// is not set-user-ID). Every other place in PATH is judged as a missing
// program is (pathWriters): another user who may create the name in one
// tried before it runs in its place, and glibc's and musl's execvp go on
// to the next folder when the exec of the file found fails with ENOENT,
// EACCES, ENOTDIR, ESTALE, ENODEV or ETIMEDOUT (a script whose
// interpreter is missing or not executable, a binary whose loader is
// missing), so a place after it runs in its place too. Empty when env
// runs the script itself (no word) or finds nothing (then nothing runs,
// and each call fails). What env would read as an option, a variable or
// more words, a relative name, an empty PATH and a PATH holding a
// relative folder (empty: the working directory) are refused: the file
// they lead to is not told here.
func envProgram(program, script, arg, envPATH string) (string, error) {
	switch {
	case arg == "":
		return "", nil
	case strings.HasPrefix(arg, "-") || strings.ContainsAny(arg, " \t="):
		return "", &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s gives env options, a variable or more than one word (%q), which the agent does not follow to the program env runs", program, script, arg), hint: interpHint}
	case strings.HasPrefix(arg, "/"):
		return arg, nil
	case strings.Contains(arg, "/"):
		return "", &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s has env run %q, a relative path, which env finds from the program's working directory", program, script, arg), hint: interpHint}
	case envPATH == "":
		// runProgram gives PATH= when the agent has none: env then
		// searches the working directory.
		return "", &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s has env find %q in PATH, which is empty (neither the agent's environment nor the handler's \"env\" gives it a folder), so env searches the program's working directory", program, script, arg),
			hint: "give PATH absolute folders (PATH=/usr/bin:/bin in the handler's \"env\", or in the agent's environment), or " + interpHint}
	}
	found := ""
	for _, dir := range strings.Split(envPATH, ":") {
		if !strings.HasPrefix(dir, "/") {
			return "", &exposedProgramError{msg: fmt.Sprintf("program %s: the #! line of %s has env find %q in PATH, which holds a folder that is not absolute (%q), searched from the program's working directory", program, script, arg, dir),
				hint: "give PATH only absolute folders (the agent's, or the handler's \"env\"), or " + interpHint}
		}
		cand := dir + "/" + arg
		if found == "" {
			if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && unix.Access(cand, unix.X_OK) == nil {
				found = cand // judged as an interpreter by judgeRun
				continue
			}
		}
		if err := pathWriters(program+"'s interpreter "+cand, cand); err != nil {
			return "", err
		}
	}
	return found, nil
}
