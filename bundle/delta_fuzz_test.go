package bundle

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// FuzzDeltaReader feeds arbitrary bytes to a reader that accepts deltas:
// no panic, every error named, and an accepted delta's header re-encodes
// to the signed bytes and lists only keys of the manifest.
func FuzzDeltaReader(f *testing.F) {
	k := testKey(1)
	_, delta, full, _ := deltaPair(f, k)
	f.Add(delta)
	f.Add(full)
	it := items(f, delta)
	f.Add(it[0])
	policy := trust(k, "*")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, arts, err := readDelta(data, policy)
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" || e.Message == "" {
				t.Fatalf("error without a name: %#v", err)
			}
			return
		}
		if len(arts) != len(r.Manifest().Artifacts) {
			t.Fatalf("%d artifacts read, manifest lists %d", len(arts), len(r.Manifest().Artifacts))
		}
		if d := r.Delta(); d != nil {
			again, err := d.Encode()
			if err != nil || !bytes.Contains(data, again) {
				t.Fatalf("accepted delta header does not re-encode: %v", err)
			}
			for _, key := range d.Omitted {
				if _, ok := r.Manifest().Artifact(key); !ok {
					t.Fatalf("accepted delta omits %s, which the manifest does not list", key)
				}
			}
		}
	})
}

// FuzzDecodeDelta: the header parser alone.
func FuzzDecodeDelta(f *testing.F) {
	_, delta, _, hdr := deltaPair(f, testKey(1))
	enc, err := hdr.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc)
	f.Add(items(f, delta)[0])
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDelta(data)
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" {
				t.Fatalf("error without a name: %#v", err)
			}
			return
		}
		again, err := d.Encode()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted header does not re-encode to its bytes: %v", err)
		}
	})
}
