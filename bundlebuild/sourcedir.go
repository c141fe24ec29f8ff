package bundlebuild

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// sourceDir reads the files of a source folder beneath the folder
// (os.Root: a path that leads out of it through a link is refused), each
// file examined before it is opened and opened without waiting
// (regfile.OpenIn: a FIFO or device put in a file's place is never opened,
// so it cannot block the build or run a driver) and taken only when it is
// still the regular file the walk listed (os.SameFile): a file swapped for
// a link, a special file or another file after the walk is refused, never
// read (docs/SPEC-DECISIONS.md, BUILD-4). The folder is opened again for each
// file, checked to be the folder the walk listed, and closed before open
// returns: no descriptor outlives a read, whether LoadSource fails or its
// draft is written, dropped or kept (BUILD-4, amended in review 34).
type sourceDir struct {
	path   string                 // the folder, made absolute when walked
	folder fs.FileInfo            // what the walk saw of the folder itself
	seen   map[string]fs.FileInfo // slash path -> what the walk saw (not following links)
}

// errSourceSwapped: a source file is no longer what the walk listed.
var errSourceSwapped = errors.New("is no longer the regular file listed when the source folder was read (replaced by a link, a special file or another file)")

// errSourceFolderSwapped: the source folder is no longer the folder walked.
var errSourceFolderSwapped = errors.New("the source folder is no longer the folder listed when it was read (replaced or moved)")

// openRoot opens the source folder as an os.Root, only while it is the
// folder the walk listed. The caller closes it.
func (s *sourceDir) openRoot() (*os.Root, error) {
	root, err := os.OpenRoot(s.path)
	if err != nil {
		return nil, err
	}
	st, err := root.Stat(".")
	if err == nil && !os.SameFile(s.folder, st) {
		err = errSourceFolderSwapped
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// open opens the source file rel (a slash path below the folder). The file
// stays open after the folder's root is closed.
func (s *sourceDir) open(rel string) (*os.File, error) {
	want, ok := s.seen[rel]
	if !ok {
		return nil, fs.ErrNotExist
	}
	root, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, st, err := regfile.OpenIn(root, filepath.FromSlash(rel))
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, errSourceSwapped
	}
	if err != nil {
		return nil, err
	}
	if !os.SameFile(want, st) {
		f.Close()
		return nil, errSourceSwapped
	}
	return f, nil
}

// read reads the source file rel whole, at most limit bytes, into a buffer
// of the size the walk saw (readSized).
func (s *sourceDir) read(rel string, limit int64) ([]byte, error) {
	f, err := s.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSized(f, s.seen[rel].Size(), limit)
}

// listedSize is the size the walk saw of the source file rel (0 for a
// file it did not list).
func (s *sourceDir) listedSize(rel string) int64 {
	if info, ok := s.seen[rel]; ok {
		return max(info.Size(), 0)
	}
	return 0
}

// readListed reads the source file rel whole, at most the size the walk
// saw (and at most limit): the bytes a build charged before the read
// (BUILD-2, as amended for growth) are all it allocates. A file that has
// grown since the walk is refused (errSourceGrew), never read further.
func (s *sourceDir) readListed(rel string, limit int64) ([]byte, error) {
	f, err := s.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := min(s.listedSize(rel), limit)
	data, err := readSized(f, size, size)
	if errors.As(err, new(tooLargeError)) {
		return nil, errSourceGrew
	}
	return data, err
}

// errSourceGrew: a source file holds more bytes than the walk saw.
var errSourceGrew = errors.New("has grown since the source folder was read")

// readSized reads a source file expected to be size bytes long into a
// buffer of that size (no growth, no garbage), refusing more than limit
// bytes; a file that grew meanwhile is still read whole up to limit.
func readSized(f io.Reader, size, limit int64) ([]byte, error) {
	data := make([]byte, 0, min(max(size, 0), limit)+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > limit {
			return nil, tooLarge(limit)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// tooLargeError is the cause of a source file refused for its size: more
// than limit bytes.
type tooLargeError struct{ limit int64 }

func (e tooLargeError) Error() string {
	switch limit := e.limit; {
	case limit%(1<<20) == 0:
		return fmt.Sprintf("file is larger than %d MiB", limit>>20)
	case limit%(1<<10) == 0:
		return fmt.Sprintf("file is larger than %d KiB", limit>>10)
	default:
		return fmt.Sprintf("file is larger than %d bytes", limit)
	}
}

// tooLarge is the cause of a source file refused for its size.
func tooLarge(limit int64) error { return tooLargeError{limit} }
