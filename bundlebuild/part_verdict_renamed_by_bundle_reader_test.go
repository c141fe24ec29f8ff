package bundlebuild

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestAnAlteredPartReachesTheBundleReaderAsPartMismatch
//
// Threat: whoever handles the media alters a part of a split bundle
// (same size, so LocateParts takes it), or swaps it for a FIFO, a
// device or another file once the parts were located. The parts reader
// checks the part when it ends and fails the next read with
// part_mismatch, naming the part; a part ends wherever the split cut
// the file, most often inside an artifact. The bundle reader renamed
// that verdict: truncated ("file ends inside artifact ..."), the name of
// a file cut in transit, which a store audits as the refusal's verdict
// (resolver/import.go) and resolver/refusalrecord.go takes for a fault
// of the transfer. Only the command's Explain, which a store never
// calls, named the part.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-32): the bundle reader returns
// the stream's own named verdict as it is, so bundle.NewReader over a
// PartsReader answers part_mismatch, naming the part, without Explain.
func TestAnAlteredPartReachesTheBundleReaderAsPartMismatch(t *testing.T) {
	k := testKey(1)
	p := trust(k, "org.example")
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, path string)
	}{
		{"a byte of the part altered", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-1] ^= 0xff // the part's last byte: its artifact goes on in the next part
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"the part swapped for a folder once located", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// One artifact of 300 KiB spans every part boundary.
			_, index, _ := splitTo(t, bigDraft(t, "org.example.split", 1, 300<<10), k, dir, "s.ampb", bundle.MinPartSize)
			x := openIndex(t, index, p)
			if len(x.Parts) < 4 {
				t.Fatalf("%d parts", len(x.Parts))
			}
			found, err := LocateParts(x, []string{filepath.Join(dir, "parts")})
			if err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, found[1])
			for _, keep := range []bool{true, false} {
				pr := NewPartsReader(x, found)
				r, err := bundle.NewReader(pr, bundle.ReaderOptions{Policy: p, Now: func() time.Time { return testNow }})
				if err != nil {
					t.Fatal(err)
				}
				if keep {
					for err == nil {
						_, err = r.Next()
					}
					if err == io.EOF {
						err = nil
					}
				} else {
					err = r.VerifyRest()
				}
				pr.Close()
				if got := amp.NameOf(err); got != bundle.ErrPartMismatch {
					t.Fatalf("keep %v: the bundle reader answered %s, want the parts reader's part_mismatch: %v", keep, got, err)
				}
				if !errors.Is(err, pr.Err()) {
					t.Fatalf("keep %v: not the parts reader's own error (%v): %v", keep, pr.Err(), err)
				}
			}
		})
	}
}
