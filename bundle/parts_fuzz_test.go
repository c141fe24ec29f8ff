package bundle

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// FuzzReadPartIndex feeds arbitrary bytes to the part index reader: no
// panic, every error named, and an accepted index is valid and
// re-encodes to the signed payload.
func FuzzReadPartIndex(f *testing.F) {
	k := testKey(1)
	file := build(f, bigDraft(f, "org.example.fuzz", 2, 80<<10), k)
	data, x, _ := splitBytes(f, file, "s.ampb", MinPartSize, k)
	f.Add(data)
	enc, _ := x.Encode()
	f.Add(enc)
	p := trust(k, "*")
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, err := ReadPartIndex(bytes.NewReader(data), p)
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" {
				t.Fatalf("error without a name: %#v", err)
			}
		} else {
			if err := got.Validate(); err != nil {
				t.Fatalf("accepted index is invalid: %v", err)
			}
			again, _ := got.Encode()
			if !bytes.Contains(data, again) {
				t.Fatal("accepted index does not re-encode to its payload")
			}
		}
		if x, err := DecodePartIndex(data); err == nil {
			again, err := x.Encode()
			if err != nil || !bytes.Equal(again, data) {
				t.Fatalf("decoded index does not re-encode: %v", err)
			}
		}
	})
}
