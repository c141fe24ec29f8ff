package bundle

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// TestDescriptorTheStoreCannotLoadIsNotDecoded: CAP-11 decoded a
// manifest's descriptors under the manifest's own caps (100,000 items an
// array), while a store loads each stored descriptor under amp's
// defaults (65,536, resolver/lookup.go): a publisher trusted for its own
// namespace signed a descriptor carrying an unknown field of 70,000
// items, every reader and the import took it, and from then on the
// store's catalog failed (store_io) for every publisher in it. A
// descriptor is decoded under amp's caps but for its size, which the
// manifest's bounds: such a manifest is malformed_bundle, as before
// CAP-11 (docs/SPEC-DECISIONS.md CAP-11, amended).
func TestDescriptorTheStoreCannotLoadIsNotDecoded(t *testing.T) {
	in, err := Inspect(bytes.NewReader(build(t, smallDraft(t), testKey(1))), 0)
	if err != nil {
		t.Fatal(err)
	}
	m := in.Manifest
	for _, tc := range []struct {
		name  string
		items int
		ok    bool
	}{
		{"an extension array of 65,536 items", 65536, true},
		{"an extension array of 70,000 items", 70000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := amp.Marshal(make([]int, tc.items))
			if err != nil {
				t.Fatal(err)
			}
			m.Capabilities[0].Extra = map[string]cbor.RawMessage{"x_wide": raw}
			data, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeManifest(data)
			if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeManifest: %v; want ok=%v, else %s", err, tc.ok, ErrMalformed)
			}
		})
	}
}
