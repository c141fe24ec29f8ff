package bundle

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// TestSignedManifestUnderARaisedReaderCapIsNotTakenForAnotherFormat: a
// reader's cap on item 0 is an option (ReaderOptions.MaxManifestSize,
// Inspect's maxManifestSize; docs/FORMAT.md §6 "16 MiB (reader
// option)"), but decodeCOSE and coseContentType decoded the item with
// amp's default limits, 16 MiB whatever the reader allowed: an embedder
// that raised the cap to 32 MiB had a genuine 18 MiB signed manifest,
// signed by a key it trusts, refused as unknown_format ("file does not
// start with a COSE_Sign (tag 98) object"), which says the file is not a
// bundle at all. Now the item is decoded within its own length: the
// raised cap reads it, and the default cap still refuses it by its name,
// limit_exceeded (docs/SPEC-DECISIONS.md BUNDLE-28). Write never makes
// such a file (BUNDLE-27), so it is built here from the signer's side.
// Amended (BUNDLE-33): a cap over the default is itself refused,
// limit_exceeded, so the file is refused by that name under either.
func TestSignedManifestUnderARaisedReaderCapIsNotTakenForAnotherFormat(t *testing.T) {
	k := testKey(1)
	small := build(t, smallDraft(t), k)
	in, err := Inspect(bytes.NewReader(small), 0)
	if err != nil {
		t.Fatal(err)
	}
	// 18 MiB over two descriptors of 9 MiB (the capability package
	// decodes one descriptor within 16 MiB).
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
	signed, err := signManifest(payload, []ed25519.PrivateKey{k}...)
	if err != nil {
		t.Fatal(err)
	}
	file := append(signed, small[len(in.SignedManifest):]...)
	now := func() time.Time { return testNow }
	for _, tc := range []struct {
		name string
		cap  int64
		want error // nil: read whole
	}{
		{"cap raised to 32 MiB", 32 << 20, ErrTooLarge},
		{"default cap", 0, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(file), ReaderOptions{Policy: trust(k, "*"), Now: now, MaxManifestSize: tc.cap})
			if err == nil {
				err = r.VerifyRest()
			}
			_, ierr := Inspect(bytes.NewReader(file), tc.cap)
			if tc.want == nil {
				if err != nil || ierr != nil {
					t.Fatalf("a signed manifest within the reader's cap was refused: reader %v, inspect %v", err, ierr)
				}
				if got := r.Manifest(); len(got.Capabilities) != 2 || got.Capabilities[1].Notes != m.Capabilities[1].Notes {
					t.Fatal("the manifest read is not the one signed")
				}
				return
			}
			expectName(t, err, ErrTooLarge)
			expectName(t, ierr, ErrTooLarge)
		})
	}
}
