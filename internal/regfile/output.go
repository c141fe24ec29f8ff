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
	// a named pipe, /dev/stdout's pipe). The output is written into it
	// through OpenOutputStream; nothing is ever renamed over it, which
	// would replace the node (or the link to it) by a regular file.
	OutputStream
)

// JudgeOutput is the one rule for the existing target of an output name
// (docs/SPEC-DECISIONS.md CLI-100): path is examined with links followed
// (os.Stat). Nothing there, or a regular file, is OutputFile; a
// character device or a FIFO (where pipes are files) is OutputStream;
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
func OpenOutputStream(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|NoWait, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !isOutputStream(st) {
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
