package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// failingStream yields data, then fails every Read with err.
type failingStream struct {
	r   *bytes.Reader
	err error
}

func (s *failingStream) Read(p []byte) (int, error) {
	n, _ := s.r.Read(p)
	if n == 0 {
		return 0, s.err
	}
	return n, nil
}

// pairErr is a comparable error type whose field may hold a value
// that is not (a detail of any type, as many libraries' error structs
// carry): == on two of them with such a value panics.
type pairErr struct{ detail any }

func (e pairErr) Error() string { return fmt.Sprintf("read failed: %v", e.detail) }

// listErr is an error type that is not comparable at all.
type listErr []string

func (e listErr) Error() string { return fmt.Sprint([]string(e)) }

// TestAStreamFailureOfAnyErrorTypeAbortsWithoutPanicOrAudit:
// attack: a caller's stream (any io.Reader a library caller, a CLI
// wrapper or a transport hands to Import) fails with an error whose type
// is not comparable, or is comparable but holds an uncomparable value.
// importStream.broke identifies the stream's failure with
// errors.Is(err, failure), i.e. err == failure (resolver/import.go,
// importStream.broke). Before (review 40): with pairErr{[]byte} that
// comparison panics inside Import's deferred classification ("comparing
// uncomparable type []uint8"): the process dies (the rules: no panic);
// with listErr errors.Is skips == and answers false, so the
// failed stream is audited as a refusal (import_refused, verdict
// internal_error), the very outcome MIRROR-13 (review 38, item 4)
// forbids. Now: both abort as io_error, no panic, no audit entry, not
// recorded as refused. importStream wraps the failure it returns in a type
// of its own, matched by errors.As, never ==.
func TestAStreamFailureOfAnyErrorTypeAbortsWithoutPanicOrAudit(t *testing.T) {
	data := sampleBytes(t, "translate")
	for _, c := range []struct {
		name string
		err  error
	}{
		{"comparable type holding a slice, failing in the manifest", pairErr{detail: []byte("conn")}},
		{"uncomparable type, failing in the manifest", listErr{"conn", "reset"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			before, err := s.Audit()
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			var ierr error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Import panicked on a stream failure of type %T: %v", c.err, p)
					}
				}()
				_, ierr = s.Import(context.Background(), &failingStream{r: bytes.NewReader(data[:16]), err: c.err}, ImportOptions{FileSHA256: sum[:]})
			}()
			after, aerr := s.Audit()
			if aerr != nil {
				t.Fatal(aerr)
			}
			if len(after) != len(before) {
				e := after[len(after)-1]
				t.Fatalf("a failed stream (%T) was audited as %s, verdict %s: the store judged nothing of the file", c.err, e.Action, e.Verdict)
			}
			if amp.NameOf(ierr) != bundle.ErrIO {
				t.Fatalf("a failed stream (%T) answered %v, want io_error", c.err, ierr)
			}
			if verdict, refused, err := s.RefusedAt(sum[:]); err != nil || refused {
				t.Fatalf("a failed stream is recorded as a refused file (%s, %v)", verdict, err)
			}
		})
	}
}

// TestAStreamThatReportsAForgedPartIsStillARefusal: attack: the
// stream itself proves the file forged. bundlebuild.PartsReader (what
// 'ampbundle import PARTS-INDEX' hands to Import) checks each part
// against the signed part index when the part ends and fails the next
// Read with part_mismatch ("altered, or a part of another split"), a
// verdict on the file's bytes, not a fault of the transfer. A part
// boundary falls anywhere, mostly inside an artifact, so the bundle
// reader sees that error mid-artifact (truncated). Before (review 40) importStream
// records every non-EOF read error as a failure "that says nothing of
// the file" (resolver/import.go, Import's deferred switch, case
// stream.broke): the tampered split is answered io_error, not audited,
// not drained, not recorded: a hostile part supplier offers altered
// parts and leaves no import_refused entry (before review 38 it was
// audited; MIRROR-13 item 2 names "an altered part of a split bundle"
// as an audited refusal). Now: a read error that carries a verdict
// on the file (a named bundle error other than io_error, here
// part_mismatch) stays a refusal: audited import_refused, answered with
// that verdict (or at least not io_error).
func TestAStreamThatReportsAForgedPartIsStillARefusal(t *testing.T) {
	data := sampleBytes(t, "translate")
	// Exactly what bundlebuild.PartsReader.Read returns for an altered part.
	partErr := amp.Named(0, bundle.ErrPartMismatch, "part 1 (b.ampb.part1of2) does not match its sha256 in the index (altered, or a part of another split)")
	s := newStore(t)
	before, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Import(context.Background(), &failingStream{r: bytes.NewReader(data[:len(data)-40]), err: partErr}, ImportOptions{})
	after, aerr := s.Audit()
	if aerr != nil {
		t.Fatal(aerr)
	}
	if amp.NameOf(err) == bundle.ErrIO {
		t.Errorf("a stream that reported an altered part was answered io_error (%v): a verdict on the file turned into a transfer fault", err)
	}
	if len(after) != len(before)+1 || after[len(after)-1].Action != "import_refused" {
		t.Fatalf("a split with an altered part left no import_refused entry (%d entries before, %d after)", len(before), len(after))
	}
}

var _ io.Reader = (*failingStream)(nil)
