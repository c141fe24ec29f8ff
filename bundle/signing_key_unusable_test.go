package bundle

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// mismatchedKey is a 64-byte key whose public half is another key's: it
// signs what no key verifies.
func mismatchedKey() ed25519.PrivateKey {
	k := append(ed25519.PrivateKey(nil), testKey(1)...)
	copy(k[32:], testKey(2)[32:])
	return k
}

// TestSigningKeysThatCannotSignAreRefusedBeforeAnyWork: a library caller
// (an embedder, a build service) hands Write, SignObject or Cosign keys
// that cannot sign: a short key panicked (in draftManifest, or in
// ed25519.Sign after every artifact was hashed), a key whose public half
// is not its seed's signed a bundle no key verifies, a key twice or nine
// keys were refused only after the artifacts were read. Each is now
// refused with a named error before anything is read or written
// (BUNDLE-25).
func TestSigningKeysThatCannotSignAreRefusedBeforeAnyWork(t *testing.T) {
	cases := []struct {
		name string
		keys []ed25519.PrivateKey
		want amp.ErrName
	}{
		{"no key", nil, ErrInconsistent},
		{"a short key", []ed25519.PrivateKey{testKey(1)[:32]}, ErrInconsistent},
		{"an empty key", []ed25519.PrivateKey{{}}, ErrInconsistent},
		{"halves of two keys", []ed25519.PrivateKey{mismatchedKey()}, ErrInconsistent},
		{"one key twice", []ed25519.PrivateKey{testKey(1), testKey(1)}, ErrDuplicateSigner},
		{"nine keys", func() []ed25519.PrivateKey {
			var ks []ed25519.PrivateKey
			for i := range 9 {
				ks = append(ks, testKey(byte(10+i)))
			}
			return ks
		}(), ErrInconsistent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := smallDraft(t)
			read := 0
			for i, a := range d.Artifacts {
				open := a.Open
				d.Artifacts[i].Open = func() (io.ReadCloser, error) {
					read++
					return open()
				}
			}
			var out bytes.Buffer
			_, err := Write(&out, d, c.keys, WriteOptions{})
			if amp.NameOf(err) != c.want {
				t.Fatalf("Write: %v, want %s", err, c.want)
			}
			if read != 0 || out.Len() != 0 {
				t.Fatalf("Write read %d artifacts and wrote %d bytes before refusing its keys", read, out.Len())
			}
			if _, err := SignObject(MediaTypeRevocation, []byte{0xa0}, c.keys); amp.NameOf(err) != c.want {
				t.Fatalf("SignObject: %v, want %s", err, c.want)
			}
		})
	}
	good := build(t, smallDraft(t), testKey(1))
	for _, k := range []ed25519.PrivateKey{mismatchedKey()} {
		var out bytes.Buffer
		_, err := Cosign(&out, bytes.NewReader(good), k, CosignOptions{Now: func() time.Time { return testNow }})
		if amp.NameOf(err) != ErrInconsistent || out.Len() != 0 {
			t.Fatalf("Cosign with a key whose halves disagree: %v, %d bytes written", err, out.Len())
		}
	}
}
