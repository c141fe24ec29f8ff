package regfile

import (
	"errors"
	"io/fs"
	"os"
)

// Output is what the name of an output holds before anything is written
// there (JudgeOutput).
type Output int

const (
	// OutputFile: nothing, or a regular file (links followed). The output
	// is written to a temporary file beside the name and renamed into
	// its place, as before.
	OutputFile Output = iota
	// OutputStream: a character device or a FIFO (/dev/null, a terminal,
	// a named pipe, /dev/stdout's pipe), or a regular file named through
	// a descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N, or a link to
	// one, with stdout redirected to a file). The output is written into
	// it through OpenOutputStream; nothing is ever renamed over it, which
	// would replace the node (or the link to it: /dev/stdout itself) by
	// a regular file.
	OutputStream
)

// JudgeOutput is the one rule for the existing target of an output name
// (docs/SPEC-DECISIONS.md CLI-100, CLI-103): path is examined with links
// followed (os.Stat). Nothing there, or a regular file, is OutputFile; a
// character device or a FIFO (where pipes are files) is OutputStream, and
// so is a regular file reached through a magic link of the proc file
// system (a descriptor's name, /proc/PID/fd/N, which Lstat of each link
// of path's chain finds: /dev/stdout, /dev/fd/N);
// anything else (a folder, a socket, a block device) is ErrNotRegular,
// to be refused before anything is written, also where the caller was
// asked to replace an existing output. Other failures to examine path
// are the system's errors.
func JudgeOutput(path string) (Output, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return OutputFile, nil
	}
	if err != nil {
		return OutputFile, err
	}
	switch {
	case st.Mode().IsRegular():
		if _, _, magic := descriptorOf(path); magic {
			return OutputStream, nil
		}
		return OutputFile, nil
	case isOutputStream(st):
		return OutputStream, nil
	}
	return OutputFile, ErrNotRegular
}

// isOutputStream reports whether st is a node an output is written into:
// a character device, or a FIFO where pipes are files.
func isOutputStream(st fs.FileInfo) bool {
	m := st.Mode()
	return m&fs.ModeCharDevice != 0 || (isPipe(st) && pipesAreFiles)
}

// ErrNotStream is the refusal of what OpenOutputStream opened when it is
// no character device or FIFO: it was closed unwritten.
var ErrNotStream = errors.New("not a device or a pipe")

// OpenOutputStream opens path, which JudgeOutput found to be
// OutputStream, for writing: without waiting, so that a FIFO no process
// reads fails at once (ENXIO) instead of blocking the command; never
// creating or truncating anything. What was opened must be a character
// device or a FIFO (fstat), else it is closed unwritten and the result
// is ErrNotStream (a regular file put in the name since it was judged
// is left as it was). The file returned blocks on writes.
//
// A name that stands for a descriptor (JudgeOutput) may lead to a
// regular file too, which is written into, never truncated: one of this
// process's own descriptors (/dev/stdout) is written through a duplicate
// of it, at its own offset and with its own flags, as `-o -` writes
// stdout (the shell's `>` truncated the file, `>>` appends; the summary
// printed to stdout after it follows the output instead of overwriting
// it); another process's (/proc/PID/fd/N) is opened again, O_WRONLY
// without O_CREATE or O_TRUNC, as `cat > /dev/stdout` does.
func OpenOutputStream(path string) (*os.File, error) {
	pid, fd, magic := descriptorOf(path)
	if magic && pid == os.Getpid() {
		return ownDescriptor(path, fd)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|NoWait, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !isOutputStream(st) && !(magic && st.Mode().IsRegular()) {
		err = ErrNotStream
	}
	if err == nil {
		err = blocking(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
