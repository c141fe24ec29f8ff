package bundle

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// OverStoreCapFileForTest is a bundle of org.example.demo (signed by
// testKey(1)) whose signed manifest is 18,876,296 bytes, over
// DefaultMaxManifestSize: two descriptors with 9 MiB of notes each.
// Write never makes such a file (BUNDLE-27), so it is signed here from
// the signer's side, for this package's tests and bundle_test's.
func OverStoreCapFileForTest(t testing.TB) []byte {
	t.Helper()
	k := testKey(1)
	small := build(t, smallDraft(t), k)
	in, err := Inspect(bytes.NewReader(small), 0)
	if err != nil {
		t.Fatal(err)
	}
	m := in.Manifest
	second := m.Capabilities[0]
	second.Version = mustVersion(t, "1.0.1")
	m.Capabilities = append(m.Capabilities, second)
	for i := range m.Capabilities {
		m.Capabilities[i].Notes = strings.Repeat("n", 9<<20)
	}
	payload, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signManifest(payload, k)
	if err != nil {
		t.Fatal(err)
	}
	return append(signed, small[len(in.SignedManifest):]...)
}

// countingReader is a bytes.Reader that counts the bytes read through
// it.
type countingReader struct {
	*bytes.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.Reader.Read(b)
	c.n += n
	return n, err
}

// TestAManifestCapAboveWhatTheStoreTakesIsRefused: the threat. A
// reader's cap on the signed manifest could be raised
// (ReaderOptions.MaxManifestSize, Inspect's maxManifestSize,
// CosignOptions.MaxManifestSize; BUNDLE-28), but nothing else of the
// project takes a manifest over 16 MiB: a store imports under the
// default, a co-signer writes no larger one, and Identify reads at most
// that, so the parts reader's check that a part index names the bundle
// its parts carry passed such a head on unchecked, and an 18 MiB
// bundle verified under a 32 MiB cap behind an index of another bundle
// (bundle_test's TestPartIndexOfAnotherBundleIsNotPassedUnderARaisedCap).
// Expected: a cap over DefaultMaxManifestSize is refused,
// limit_exceeded naming the option, before a byte is read or written;
// the default, the default itself and a lowered cap read as before
// (docs/SPEC-DECISIONS.md BUNDLE-33).
func TestAManifestCapAboveWhatTheStoreTakesIsRefused(t *testing.T) {
	k := testKey(1)
	big, small := OverStoreCapFileForTest(t), build(t, smallDraft(t), k)
	now := func() time.Time { return testNow }
	entries := []struct {
		name   string
		option string
		read   func(r io.ReadSeeker, w io.Writer, cap int64) error
	}{
		{"NewReader", "ReaderOptions.MaxManifestSize", func(r io.ReadSeeker, _ io.Writer, cap int64) error {
			rd, err := NewReader(r, ReaderOptions{Policy: trust(k, "*"), Now: now, MaxManifestSize: cap})
			if err == nil {
				err = rd.VerifyRest()
			}
			return err
		}},
		{"Inspect", "Inspect's maxManifestSize", func(r io.ReadSeeker, _ io.Writer, cap int64) error {
			_, err := Inspect(r, cap)
			return err
		}},
		{"Cosign", "CosignOptions.MaxManifestSize", func(r io.ReadSeeker, w io.Writer, cap int64) error {
			_, err := Cosign(w, r, testKey(2), CosignOptions{Now: now, MaxManifestSize: cap})
			return err
		}},
	}
	for _, e := range entries {
		for _, tc := range []struct {
			name string
			cap  int64
			file []byte
			ok   bool
		}{
			{"one byte over the default", DefaultMaxManifestSize + 1, big, false},
			{"32 MiB", 32 << 20, big, false},
			{"the largest int64", math.MaxInt64, big, false},
			{"the default, an 18 MiB manifest", 0, big, false},
			{"the default", 0, small, true},
			{"exactly the default", DefaultMaxManifestSize, small, true},
			{"lowered to 64 KiB", 64 << 10, small, true},
		} {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				cr := &countingReader{Reader: bytes.NewReader(tc.file)}
				var out bytes.Buffer
				err := e.read(cr, &out, tc.cap)
				if tc.ok {
					if err != nil {
						t.Fatalf("a cap a reader may set was refused: %v", err)
					}
					return
				}
				expectName(t, err, ErrTooLarge)
				if tc.cap > DefaultMaxManifestSize {
					if !strings.Contains(err.Error(), e.option) {
						t.Errorf("the refusal does not name %s: %v", e.option, err)
					}
					if cr.n != 0 || out.Len() != 0 {
						t.Errorf("the refusal came after %d bytes read and %d written", cr.n, out.Len())
					}
				}
			})
		}
	}
}
