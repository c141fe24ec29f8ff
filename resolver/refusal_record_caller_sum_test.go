package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestRefusalOfOtherBytesDoesNotRecordTheNamedFileAsRefused: the record
// of recent refusals (MIRROR-11), which sync trusts to skip a listed file
// for a day without downloading it (MIRROR-12), was keyed by the caller's
// ImportOptions.FileSHA256, never checked against the bytes. Bytes that
// are not the named file had the good file recorded as refused:
//
//   - a split bundle whose part was altered: 'ampbundle import INDEX'
//     passes the whole file's SHA-256 from the signed part index, and the
//     altered bytes reach the bundle reader (hash_mismatch) before the
//     part's own check fires;
//   - a stream cut at an artifact boundary (count_mismatch, not
//     truncated);
//   - any bytes at all, through the admin socket's file_sha256.
//
// The store now records a refusal only under the SHA-256 of the bytes it
// read to their end (MIRROR-13): RefusedAt(good file) says not refused.
func TestRefusalOfOtherBytesDoesNotRecordTheNamedFileAsRefused(t *testing.T) {
	good := variant(t, 2, nil)
	goodSum := sha256.Sum256(good)

	altered := bytes.Clone(good)
	altered[len(altered)-2] ^= 0x01 // inside the last artifact

	cut := cutAtArtifactBoundary(t, good)

	for _, c := range []struct {
		name string
		data []byte
	}{
		{"an altered artifact byte (an altered part of a split)", altered},
		{"a transfer cut at an artifact boundary", cut},
		{"other bytes under the good file's SHA-256 (admin socket file_sha256)", []byte("not a bundle at all")},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			_, err := s.Import(context.Background(), bytes.NewReader(c.data), ImportOptions{FileSHA256: goodSum[:]})
			if err == nil {
				t.Fatal("the bad bytes were imported")
			}
			if v, ok, rerr := s.RefusedAt(goodSum[:]); rerr != nil || ok {
				t.Fatalf("after a refusal (%v) of bytes that are not the good file, RefusedAt(good file) = %q %v %v: "+
					"sync now skips the genuine file for a day without downloading it; want not refused", amp.NameOf(err), v, ok, rerr)
			}
			// The genuine file is still importable directly: the harm is
			// what sync skips, not what the store refuses.
			if _, err := importBytes(t, s, good, ImportOptions{FileSHA256: goodSum[:]}); err != nil {
				t.Fatalf("the genuine file: %v", err)
			}
		})
	}
}

// cutAtArtifactBoundary returns a prefix of the bundle file data that
// ends exactly before its last artifact (a transfer cut there), checked
// to be refused with a verdict other than truncated.
func cutAtArtifactBoundary(t *testing.T, data []byte) []byte {
	t.Helper()
	in, err := bundle.Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	arts := in.Manifest.Artifacts
	last := int(arts[len(arts)-1].Size)
	for _, head := range []int{1, 2, 3, 5, 9} {
		p := len(data) - last - head
		if p <= 0 {
			continue
		}
		probe := newStore(t)
		_, err := probe.Import(context.Background(), bytes.NewReader(data[:p]), ImportOptions{})
		if n := amp.NameOf(err); n != "" && n != bundle.ErrTruncated {
			return data[:p]
		}
	}
	t.Fatal("no cut at an artifact boundary found")
	return nil
}
