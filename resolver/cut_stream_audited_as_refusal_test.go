package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// cutStream yields data up to cut, then fails with err (a connection cut
// mid-body: io.ErrUnexpectedEOF; a clean end: io.EOF).
type cutStream struct {
	r   *bytes.Reader
	err error
}

func (c *cutStream) Read(p []byte) (int, error) {
	n, _ := c.r.Read(p)
	if n == 0 {
		return 0, c.err
	}
	return n, nil
}

// TestACutStreamIsNotAuditedAsARefusal: attack: an import whose stream
// failed (a read error that is not its end: the admin socket's caller
// cut its connection, its body read too slowly, a disk error under a
// local file) was audited as a refusal of the bundle, import_refused
// with verdict internal_error (a failed head read) or truncated (a
// failed read inside an artifact), though the store judged nothing of
// the file: the audit log, which operators and sync read as the store's
// verdicts, said a genuine bundle was refused, and every cut connection
// of a runaway script wrote another chained entry. Now a failed stream
// aborts the import (io_error, as a cancel: not audited, not drained,
// never recorded as refused), wherever it fails; a file that simply
// ends early (a clean EOF) is still refused and audited as truncated,
// a verdict on the file.
func TestACutStreamIsNotAuditedAsARefusal(t *testing.T) {
	data := sampleBytes(t, "translate")
	for _, c := range []struct {
		name    string
		cut     int
		err     error
		verdict amp.ErrName // "": aborted, not audited
	}{
		{"failed inside the signed manifest", 16, io.ErrUnexpectedEOF, ""},
		{"failed inside an artifact", len(data) - 40, io.ErrUnexpectedEOF, ""},
		{"failed after the last artifact", len(data), io.ErrUnexpectedEOF, ""},
		{"ended inside an artifact", len(data) - 40, io.EOF, bundle.ErrTruncated},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			before, err := s.Audit()
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			_, err = s.Import(context.Background(), &cutStream{r: bytes.NewReader(data[:c.cut]), err: c.err}, ImportOptions{FileSHA256: sum[:]})
			after, aerr := s.Audit()
			if aerr != nil {
				t.Fatal(aerr)
			}
			if c.verdict != "" {
				expectName(t, err, c.verdict)
				if len(after) != len(before)+1 || after[len(after)-1].Action != "import_refused" || after[len(after)-1].Verdict != string(c.verdict) {
					t.Fatalf("a file that ends early was not audited as refused (%s)", c.verdict)
				}
				return
			}
			expectName(t, err, bundle.ErrIO)
			if len(after) != len(before) {
				e := after[len(after)-1]
				t.Fatalf("a stream that failed was audited as %s (verdict %s): the store judged nothing of the file", e.Action, e.Verdict)
			}
			if verdict, refused, err := s.RefusedAt(sum[:]); err != nil || refused {
				t.Fatalf("a stream that failed is recorded as a refused file (%s, %v)", verdict, err)
			}
		})
	}
}
