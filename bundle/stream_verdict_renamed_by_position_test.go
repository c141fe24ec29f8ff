package bundle

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// namedAfter returns the first n bytes of data, then fails every read
// with err: a stream whose reader below reached a verdict of its own at
// byte n, as bundlebuild.PartsReader does at the end of a part that does
// not match its signed index.
func namedAfter(data []byte, n int, err error) io.Reader {
	return io.MultiReader(bytes.NewReader(data[:n]), readerFunc(func([]byte) (int, error) { return 0, err }))
}

// TestAStreamsOwnVerdictIsNotRenamedByWhereItFalls
//
// Threat: a split bundle (docs/FORMAT.md §13) whose part is altered,
// swapped, cut or grown while it is read. bundlebuild.PartsReader checks
// each part when it ends and fails the next read with part_mismatch,
// naming the part (or io_error, naming it, when the part cannot be
// opened or read); a part ends wherever the split cut the file. The
// bundle reader then renamed that verdict after the place it fell in:
// truncated ("file ends inside artifact ...") inside an artifact,
// malformed_bundle ("indefinite-length or reserved cbor item") at an
// artifact's head, malformed_bundle ("signed manifest is not valid
// cbor") inside a delta's signed manifest, io_error after the last
// artifact. A store audits that name as the refusal's verdict
// (resolver/import.go, auditRefusalFrom), and resolver/refusalrecord.go
// takes truncated for a cut transfer: one altered split was recorded as
// cut, as not CBOR, or as a failed medium, depending on the part size.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-32): a read error that is the
// stream's own named verdict (an *amp.Error of this project, no AMP
// code) is returned as it is, wherever it stops the read. An error of
// the medium stays io_error and the end of the file keeps its names
// (BUNDLE-30).
func TestAStreamsOwnVerdictIsNotRenamedByWhereItFalls(t *testing.T) {
	k := testKey(1)
	p := trust(k, "org.example")
	now := func() time.Time { return testNow }
	file := build(t, smallDraft(t), k)
	in, err := Inspect(bytes.NewReader(file), 0)
	if err != nil {
		t.Fatal(err)
	}
	head := len(in.SignedManifest)
	_, delta, _, _ := deltaPair(t, k)
	di := items(t, delta)
	deltaHead := len(di[0])

	read := func(r io.Reader, keep bool) error {
		rd, err := NewReader(r, ReaderOptions{Policy: p, Now: now, AllowDelta: true})
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
	verdicts := []*amp.Error{
		amp.Named(0, ErrPartMismatch, "part 2 (b.ampb.part002) does not match its sha256 in the index (altered, or a part of another split)"),
		amp.Named(0, ErrIO, "cannot open part 2 (b.ampb.part002)"),
	}
	for _, tc := range []struct {
		name string
		data []byte
		at   int // the stream reaches its verdict after this many bytes
	}{
		{"inside the signed manifest", file, head / 2},
		{"at the head of the first artifact", file, head},
		{"at the head of the second artifact", file, head + len(items(t, file)[1])},
		{"inside the last artifact", file, len(file) - 1},
		{"after the last artifact", file, len(file)},
		{"inside a delta's signed manifest", delta, deltaHead + len(di[1])/2},
		{"at the head of a delta's first carried artifact", delta, deltaHead + len(di[1])},
	} {
		for _, v := range verdicts {
			for _, keep := range []bool{true, false} {
				err := read(namedAfter(tc.data, tc.at, v), keep)
				if got := amp.NameOf(err); got != v.Name {
					t.Errorf("%s (keep %v): the stream's %s came back as %s: %v", tc.name, keep, v.Name, got, err)
					continue
				}
				if !errors.Is(err, v) {
					t.Errorf("%s (keep %v): not the stream's own error: %v", tc.name, keep, err)
				}
			}
		}
	}
	// An error of the medium is still io_error, with it as the cause, and
	// amp's own verdicts on the bytes keep their names (BUNDLE-30).
	for _, at := range []int{head / 2, head, len(file) - 1, len(file)} {
		err := read(failingAfter(file, at), false)
		expectName(t, err, ErrIO)
		if !errors.Is(err, errMedium) {
			t.Errorf("at %d: the medium's error is not the cause: %v", at, err)
		}
	}
	for _, tc := range []struct {
		at   int
		want amp.ErrName
	}{{head / 2, ErrTruncated}, {head, ErrCountMismatch}, {len(file) - 1, ErrTruncated}} {
		expectName(t, read(bytes.NewReader(file[:tc.at]), false), tc.want)
	}
	bad := append(bytes.Clone(file[:head]), 0x5f) // an indefinite-length byte string
	expectName(t, read(bytes.NewReader(bad), false), ErrMalformed)
}
