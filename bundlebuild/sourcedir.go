package bundlebuild

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// sourceDir reads the files of a source folder beneath the folder opened
// once (os.Root: a path that leads out of it through a link is refused),
// each file opened without waiting (a FIFO or device put in a file's place
// cannot block the build) and taken only when it is still the regular file
// the walk listed (os.SameFile): a file swapped for a link, a special file
// or another file after the walk is refused, never read
// (docs/SPEC-DECISIONS.md, BUILD-4). The root stays open while the draft's
// schema sources may still be opened; it is closed when it is no longer
// reachable.
type sourceDir struct {
	root *os.Root
	seen map[string]fs.FileInfo // slash path -> what the walk saw (not following links)
}

// errSourceSwapped: a source file is no longer what the walk listed.
var errSourceSwapped = errors.New("is no longer the regular file listed when the source folder was read (replaced by a link, a special file or another file)")

// open opens the source file rel (a slash path below the folder).
func (s *sourceDir) open(rel string) (*os.File, error) {
	want, ok := s.seen[rel]
	if !ok {
		return nil, fs.ErrNotExist
	}
	f, err := s.root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|openNoWait, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || !os.SameFile(want, st)) {
		err = errSourceSwapped
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// read reads the source file rel, expected to be size bytes long
// (readSized).
func (s *sourceDir) read(rel string, size int64) ([]byte, error) {
	f, err := s.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSized(f, size)
}

// readSized reads a source file expected to be size bytes long into a
// buffer of that size (no growth, no garbage), refusing more than
// maxSourceFile bytes; a file that grew meanwhile is still read whole.
func readSized(f io.Reader, size int64) ([]byte, error) {
	data := make([]byte, 0, min(max(size, 0), maxSourceFile)+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if len(data) > maxSourceFile {
			return nil, errors.New("file is larger than 16 MiB")
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
