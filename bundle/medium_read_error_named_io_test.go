package bundle

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// errMedium is what a failing medium returns (EIO of a worn USB stick).
var errMedium = errors.New("input/output error")

// failingAfter returns the first n bytes of data, then errMedium: a file
// whose medium fails at byte n.
func failingAfter(data []byte, n int) io.Reader {
	return io.MultiReader(bytes.NewReader(data[:n]), readerFunc(func([]byte) (int, error) { return 0, errMedium }))
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

// TestAReadThatFailsIsNamedIOErrorNotAFaultOfTheFile
//
// Threat: the medium a bundle or a part index crosses the air gap on
// fails mid-read (EIO). The error named the file instead: a part index
// read in full and then a failing read was trailing_data, as if bytes
// had been appended to a signed file; a failure inside an artifact was
// truncated, as if the file had been cut; one inside the signed manifest
// or at an artifact's head came back as the reader's own error, with no
// name of this package at all (docs/FORMAT.md §10 lists the names a
// reader gives). An operator told that a signed file was altered or cut
// looks for an attacker, or re-fetches a file that was never wrong.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-30): an error of the reader
// itself is io_error, with the reader's error as its cause, wherever it
// stops the read; the end of the file keeps its own names (truncated,
// count_mismatch, trailing_data).
func TestAReadThatFailsIsNamedIOErrorNotAFaultOfTheFile(t *testing.T) {
	k := testKey(1)
	file := build(t, smallDraft(t), k)
	in, err := Inspect(bytes.NewReader(file), 0)
	if err != nil {
		t.Fatal(err)
	}
	head := len(in.SignedManifest)
	p := trust(k, "org.example")
	now := func() time.Time { return testNow }
	read := func(r io.Reader, keep bool) error {
		rd, err := NewReader(r, ReaderOptions{Policy: p, Now: now})
		if err != nil {
			return err
		}
		if !keep {
			return rd.VerifyRest()
		}
		for {
			if _, err := rd.Next(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	for _, tc := range []struct {
		name string
		at   int // the medium fails after this many bytes
	}{
		{"inside the signed manifest", head / 2},
		{"at the head of the first artifact", head},
		{"inside the last artifact", len(file) - 1},
		{"after the last artifact", len(file)},
	} {
		for _, keep := range []bool{true, false} {
			err := read(failingAfter(file, tc.at), keep)
			expectName(t, err, ErrIO)
			if !errors.Is(err, errMedium) {
				t.Errorf("%s (keep %v): the medium's error is not the cause: %v", tc.name, keep, err)
			}
		}
	}
	// The end of the file keeps its names.
	for _, tc := range []struct {
		at   int
		want amp.ErrName
	}{{head / 2, ErrTruncated}, {head, ErrCountMismatch}, {len(file) - 1, ErrTruncated}} {
		for _, keep := range []bool{true, false} {
			expectName(t, read(bytes.NewReader(file[:tc.at]), keep), tc.want)
		}
	}

	t.Run("part index", func(t *testing.T) {
		signed, _, _ := splitBytes(t, file, "s.ampb", 200, k)
		_, _, err := ReadPartIndex(failingAfter(signed, len(signed)), p)
		expectName(t, err, ErrIO)
		_, err = DecodePartIndexFile(failingAfter(signed, len(signed)))
		expectName(t, err, ErrIO)
		_, err = DecodePartIndexFile(failingAfter(signed, len(signed)/2))
		expectName(t, err, ErrIO)
		// A byte after the index is still trailing data, whatever it is.
		for _, b := range []byte{0x00, 0x41, 0x5f, 0xff} {
			_, _, err := ReadPartIndex(bytes.NewReader(append(bytes.Clone(signed), b)), p)
			expectName(t, err, ErrTrailingData)
		}
	})
}
