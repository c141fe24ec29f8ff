package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// Standard input and output for bundle files (docs/CLI.md §1): "-" as
// the FILE of verify, inspect and import reads stdin; "-o -" of build,
// export and join writes stdout. Outputs to a file are atomic and refuse
// to replace an existing file without --force (join, export; split does
// the same for its parts); every writer first removes what a killed run
// left in the folder (bundlebuild.RemoveStaleTemps). An output named
// through one of this process's own descriptors (-o /dev/stdout,
// /dev/fd/N) is written through a duplicate of it once complete, as
// stdout is; -o /dev/null is produced, checked and discarded; any other
// name that holds no regular file (a device, a FIFO, a socket, a folder,
// another process's descriptor) is refused before anything is read,
// signed or written (judgeOut; docs/SPEC-DECISIONS.md CLI-105).

// stdio is the FILE name that means stdin or stdout.
const stdio = "-"

// forceFlag lets join, split and export replace an existing output.
var forceFlag = &cli.BoolFlag{Name: "force", Usage: "replace an existing output file"}

// defaultMaxStdin bounds what import spools of stdin (--max-stdin-size).
const defaultMaxStdin = "4G"

// summaryTo is where a writing command prints its summary: stderr when
// stdout carries the bundle's bytes: with out "-", or out a name that
// stands for this process's descriptor 1 (-o /dev/stdout, /dev/fd/1:
// regfile.OwnDescriptor, docs/SPEC-DECISIONS.md CLI-104, CLI-105), which
// would else get the summary after the bundle. Anything else, -o
// /dev/null included, prints it to stdout, as for a file.
func summaryTo(env *cliutil.Env, out string) io.Writer {
	if out == stdio {
		return env.Stderr
	}
	if fd, ok := regfile.OwnDescriptor(out); ok && fd == 1 {
		return env.Stderr
	}
	return env.Stdout
}

// writeOutput writes what write produces to out: to a temporary file of
// kind in out's folder, synced and moved into place, never replacing an
// existing out unless force; with out "-", to a temporary file in the
// system's temporary folder that is copied to stdout once write has
// succeeded (so that nothing reaches stdout from a write that fails its
// checks half-way). It returns the size and SHA-256 written.
//
// An out named through one of this process's descriptors (judgeOut) is
// written as stdout is, through a duplicate of the descriptor once
// complete (copyToStream), with or without force; -o /dev/null is
// produced complete and discarded; any other out that is not a regular
// file is refused before anything is written.
func writeOutput(env *cliutil.Env, out, kind string, force bool, write func(io.Writer) error) (int64, string, error) {
	toStdout := out == stdio
	k := regfile.OutputFile
	if !toStdout {
		var err error
		if k, err = judgeOut(out); err != nil {
			return 0, "", err
		}
	}
	stream := k != regfile.OutputFile
	dir := filepath.Dir(out)
	if toStdout || stream {
		dir = os.TempDir()
	}
	if !toStdout && !stream && !force {
		if _, err := os.Lstat(out); err == nil {
			return 0, "", existsError(out)
		}
	}
	// The leftovers are removed after the existence check: a file_exists
	// refusal changes nothing (BUILD-13).
	bundlebuild.RemoveStaleTemps(dir, env.Now())
	f, err := bundlebuild.CreateTemp(dir, kind)
	if err != nil {
		return 0, "", cliutil.Failf("io_error", "cannot create the output file").WithCause(err)
	}
	defer f.Close()
	defer os.Remove(f.Name()) // after a successful move this is a no-op
	h := sha256.New()
	cw := &bundlebuild.CountingWriter{W: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, 256<<10)
	if err := write(bw); err != nil {
		return 0, "", err
	}
	if err := bw.Flush(); err != nil {
		return 0, "", cliutil.Failf("io_error", "cannot write the output file").WithCause(err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if toStdout {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, "", cliutil.Failf("io_error", "cannot read back the output").WithCause(err)
		}
		if _, err := io.Copy(env.Stdout, f); err != nil {
			return 0, "", cliutil.Failf("io_error", "cannot write to stdout").WithCause(err)
		}
		return cw.N, sum, nil
	}
	if stream {
		if err := copyToStream(f, out, k); err != nil {
			return 0, "", err
		}
		return cw.N, sum, nil
	}
	if err := f.Sync(); err != nil {
		return 0, "", cliutil.Failf("io_error", "cannot write the output file").WithCause(err)
	}
	if err := moveIntoPlace(f.Name(), out, force); err != nil {
		return 0, "", err
	}
	// A folder that cannot be synced is not an error here: the file
	// itself is complete either way.
	_ = regfile.SyncDir(dir)
	return cw.N, sum, nil
}

// moveIntoPlace moves the complete temporary file tmp to out. Without
// force it is regfile.LinkNew, as for key files (keyfile's writeNew): it
// links tmp there, which fails when out appeared meanwhile, then removes
// tmp; where the file system has no links it checks and renames. out is
// judged again first (stillFile).
func moveIntoPlace(tmp, out string, force bool) error {
	if err := stillFile(out); err != nil {
		return err
	}
	if !force {
		err := regfile.LinkNew(tmp, out)
		if errors.Is(err, fs.ErrExist) {
			return existsError(out)
		}
		if err != nil {
			return cliutil.Failf("io_error", "cannot move the output into place").WithCause(err)
		}
		return nil
	}
	if err := os.Rename(tmp, out); err != nil {
		return cliutil.Failf("io_error", "cannot move the output into place").WithCause(err)
	}
	return nil
}

// judgeOut is the one output rule of every writer of an -o FILE
// (regfile.JudgeOutput; docs/SPEC-DECISIONS.md CLI-105): build, sign,
// receipt, revoke, rotate and heartbeat (writeAtomic, judged before any
// key is read), export and join (writeOutput), pull (pullTarget,
// pullBundle, writePulled). Nothing there or a regular file is
// OutputFile, written beside and renamed as before; a name standing for
// one of this process's descriptors is OutputOwn and /dev/null is
// OutputDiscard (copyToStream); anything else (a device, a FIFO, a
// socket, a folder, another process's descriptor) is io_error, before
// anything is read, signed or written, also with --force.
func judgeOut(out string) (regfile.Output, error) {
	k, err := regfile.JudgeOutput(out)
	if errors.Is(err, regfile.ErrNotRegular) {
		return k, cliutil.WithHint(cliutil.Failf("io_error", "%s is not a regular file (a device, a pipe, a socket, a folder or another process's descriptor); nothing is written into it or replaces it, also with --force", out),
			"give another -o FILE (-o - for stdout)")
	}
	if err != nil {
		return k, cliutil.Failf("io_error", "cannot examine the output file").WithCause(err)
	}
	return k, nil
}

// stillFile judges out again immediately before a writer renames over it
// or removes it (as ocitransport's renameSynced does): a build or a
// download may take minutes, and what was put at the name meanwhile must
// still be nothing or a regular file, else io_error and nothing is
// replaced.
func stillFile(out string) error {
	k, err := judgeOut(out)
	if err == nil && k != regfile.OutputFile {
		err = cliutil.Failf("io_error", "%s is no longer a regular file; it is never replaced", out)
	}
	return err
}

// copyToStream writes the complete output r (a temporary file, rewound
// here, or bytes) where out of kind k (judgeOut) sends it: through a
// duplicate of the descriptor of this process out stands for
// (regfile.OpenOutputStream: the name is never opened), or nowhere for
// /dev/null (OutputDiscard: nothing is opened).
func copyToStream(r io.Reader, out string, k regfile.Output) error {
	if k == regfile.OutputDiscard {
		return nil
	}
	if f, ok := r.(*os.File); ok {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return cliutil.Failf("io_error", "cannot read back the output").WithCause(err)
		}
	}
	w, err := regfile.OpenOutputStream(out)
	if err != nil {
		return cliutil.Failf("io_error", "cannot write to %s", out).WithCause(err)
	}
	_, err = io.Copy(w, r)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return cliutil.Failf("io_error", "cannot write to %s", out).WithCause(err)
	}
	return nil
}

func existsError(out string) error {
	return cliutil.WithHint(cliutil.Failf(bundlebuild.ErrFileExists, "%s exists; it is replaced only with --force", out),
		"give another -o FILE, or --force to replace it")
}

// spooled is stdin copied to a temporary file, so that import can read
// it more than once; Close removes it.
type spooled struct{ *os.File }

func (s spooled) Close() error {
	err := s.File.Close()
	os.Remove(s.Name())
	return err
}

// spoolStdin copies stdin, at most max bytes (more is limit_exceeded,
// and nothing is imported), to a temporary file in the system's
// temporary folder and returns it rewound.
func spoolStdin(env *cliutil.Env, max int64) (*spooled, error) {
	dir := os.TempDir()
	bundlebuild.RemoveStaleTemps(dir, env.Now())
	f, err := bundlebuild.CreateTemp(dir, "stdin")
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot create a temporary file for stdin").WithCause(err)
	}
	s := &spooled{f}
	n, err := io.Copy(f, io.LimitReader(env.Stdin, max+1))
	if err != nil {
		s.Close()
		return nil, cliutil.Failf("io_error", "cannot read stdin").WithCause(err)
	}
	if n > max {
		s.Close()
		return nil, cliutil.WithHint(cliutil.Failf("limit_exceeded", "stdin holds more than %d bytes (--max-stdin-size)", max),
			"raise --max-stdin-size, or give the bundle as a file")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		s.Close()
		return nil, cliutil.Failf("io_error", "cannot read back stdin").WithCause(err)
	}
	return s, nil
}

// inputName is how a FILE argument is named in output.
func inputName(path string) string {
	if path == stdio {
		return "stdin"
	}
	return path
}

// outputName is how an -o FILE is named in output.
func outputName(path string) string {
	if path == stdio {
		return "stdout"
	}
	return path
}

// writeBuilt writes a built bundle: with out "-" to stdout once complete
// (writeOutput), else atomically to out as build always has (writeAtomic).
func writeBuilt(env *cliutil.Env, out string, write func(io.Writer) (*bundle.Manifest, error)) (*bundle.Manifest, int64, string, error) {
	if out != stdio {
		return writeAtomic(out, write)
	}
	var m *bundle.Manifest
	size, sum, err := writeOutput(env, out, "build", true, func(w io.Writer) error {
		var err error
		m, err = write(w)
		return err
	})
	return m, size, sum, err
}
