package regfile

import (
	"io/fs"
	"os"
)

// OpenStream opens path for reading when it leads to a regular file or
// to a pipe: a FIFO, or the pipe a shell's process substitution names
// (`<(…)`, /dev/fd/N). Links are followed, the operator's and
// /dev/fd's. A regular file is opened as Open opens one (examined first,
// never waiting, then blocking). A pipe is opened as the system opens
// one, waiting for a writer, and then blocks on reads: a writer may never
// come, or never finish, so the caller bounds the time it gives the open
// and the reads, and runs them where they may be left waiting. Anything
// else (a device, a socket, a folder) is ErrNotRegular and is never
// opened; on Linux the name is examined through an O_PATH descriptor and
// what it names is opened through /proc/self/fd, as Open does, so a
// device put in its place since is not opened either. Where pipes are
// not files (Windows), a pipe is ErrNotRegular too
// (docs/SPEC-DECISIONS.md, CLI-57).
func OpenStream(path string) (*os.File, fs.FileInfo, error) {
	return openStream(path, procSelfFD)
}

// isPipe reports whether st is a FIFO (a named one or a shell's pipe).
func isPipe(st fs.FileInfo) bool { return st.Mode()&fs.ModeNamedPipe != 0 }

// openStreamByName examines path (stat: links followed), then opens it:
// a regular file through Open, a pipe, where pipes are files, with a
// waiting open whose file must be the pipe examined (os.SameFile). A node
// put in the name between the two looks is opened before it is refused:
// openStream comes here only where the system has no descriptor that
// opens nothing. A regular file is opened through proc (procSelfFD), as
// Open opens one.
func openStreamByName(path, proc string) (*os.File, fs.FileInfo, error) {
	seen, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if seen.Mode().IsRegular() {
		return openVia(path, FollowLinks, proc)
	}
	if !isPipe(seen) || !pipesAreFiles {
		return nil, nil, ErrNotRegular
	}
	f, err := os.OpenFile(path, os.O_RDONLY, 0) // waits for a writer
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !isPipe(st) || !os.SameFile(seen, st) {
		f.Close()
		return nil, nil, ErrNotRegular
	}
	return f, st, nil
}
