package bundle

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// changingFile serves first on the first read of the file and second
// once it has been rewound: a file rewritten between Cosign's two reads.
type changingFile struct {
	*bytes.Reader
	second []byte
	seeks  int
}

func (c *changingFile) Seek(off int64, whence int) (int64, error) {
	if c.seeks++; c.seeks > 1 {
		pos, _ := c.Reader.Seek(0, io.SeekCurrent)
		c.Reader = bytes.NewReader(c.second)
		c.Reader.Seek(pos, io.SeekStart)
	}
	return c.Reader.Seek(off, whence)
}

// TestCosignOfABundleWhoseArtifactsDoNotVerifyWritesNothing
//
// Attack: a co-signing officer (a signing service, an embedder of the
// library) is handed a bundle whose signed manifest verifies but whose
// artifacts do not: an artifact altered, the file cut short, an extra
// item or a byte appended. Cosign signed the manifest and wrote it, the
// officer's new signature in it, to w before it read a single artifact,
// then copied the artifacts while checking them: the officer's signature
// over a bundle that never verified had left the process (a pipe, a
// socket, a file the caller does not remove) by the time Cosign refused
// it, against docs/FORMAT.md §2 ("never signs one that does not verify").
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-29): the whole bundle is
// verified before anything is signed or written; the artifacts are then
// read a second time and verified again as they are copied, so a file
// changed between the two reads is refused too.
func TestCosignOfABundleWhoseArtifactsDoNotVerifyWritesNothing(t *testing.T) {
	publisher, officer := testKey(1), testKey(2)
	good := build(t, smallDraft(t), publisher)
	in, err := Inspect(bytes.NewReader(good), 0)
	if err != nil {
		t.Fatal(err)
	}
	head := len(in.SignedManifest)
	flipLast := bytes.Clone(good)
	flipLast[len(flipLast)-1] ^= 0x01
	now := CosignOptions{Now: func() time.Time { return testNow }}
	for _, tc := range []struct {
		name string
		file []byte
		want amp.ErrName
	}{
		{"an artifact altered", flipLast, ErrHashMismatch},
		{"cut inside the last artifact", good[:len(good)-1], ErrTruncated},
		{"cut after the signed manifest", good[:head], ErrCountMismatch},
		{"an extra artifact", append(bytes.Clone(good), 0x41, 0x00), ErrCountMismatch},
		{"a byte appended", append(bytes.Clone(good), 0x00), ErrTrailingData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Cosign(&out, bytes.NewReader(tc.file), officer, now)
			expectName(t, err, tc.want)
			if out.Len() != 0 {
				t.Fatalf("a refused co-signature wrote %d bytes (the officer's signature among them)", out.Len())
			}
		})
	}
	t.Run("the file changed between the two reads", func(t *testing.T) {
		var out bytes.Buffer
		_, err := Cosign(&out, &changingFile{Reader: bytes.NewReader(good), second: flipLast}, officer, now)
		expectName(t, err, ErrHashMismatch)
	})
	t.Run("a genuine bundle is co-signed as before", func(t *testing.T) {
		both := build(t, smallDraft(t), publisher, officer)
		for _, skip := range []int{0, 4} { // read from the start of r, and from further on
			r := bytes.NewReader(append(bytes.Repeat([]byte{0xff}, skip), good...))
			r.Seek(int64(skip), io.SeekStart)
			var out bytes.Buffer
			if _, err := Cosign(&out, r, officer, now); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), both) {
				t.Fatalf("from offset %d: the co-signed file differs from the file both keys build", skip)
			}
		}
	})
}
