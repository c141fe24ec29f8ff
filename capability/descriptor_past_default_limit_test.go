package capability_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// TestDescriptorUnderTheManifestsOwnCapIsNotRefusedByAmpsDefault covers a
// cap the caller could neither raise nor lower (docs/SPEC-DECISIONS.md
// CAP-11, left open by BUNDLE-28).
//
// Threat: a reader's manifest cap is an option (bundle.ReaderOptions
// MaxManifestSize, docs/FORMAT.md §6), and bundle.DecodeManifest decodes
// the manifest within its own length, but each descriptor in it was
// decoded by capability.DecodeDescriptor under amp's default 16 MiB. An
// embedder that raised the cap to 32 MiB had a manifest whose one
// descriptor is 17 MiB refused as malformed_bundle ("manifest has a
// field of the wrong type"), a name that says the bundle is broken; and
// no caller could hold a descriptor to less than 16 MiB.
//
// Before: DecodeManifest refused the manifest below, and there was no
// decode that takes the caller's caps. Should: the manifest decodes
// with its descriptor whole; DecodeDescriptorLimits honours a raised and
// a lowered cap; DecodeDescriptor keeps amp's default.
func TestDescriptorUnderTheManifestsOwnCapIsNotRefusedByAmpsDefault(t *testing.T) {
	f, err := os.Open("../testdata/bundles/translate.ampb")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := bundle.Inspect(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := in.Manifest
	small, err := m.Capabilities[0].Encode()
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Repeat("n", 17<<20)
	m.Capabilities[0].Notes = notes
	big, err := m.Capabilities[0].Encode()
	if err != nil {
		t.Fatal(err)
	}
	payload, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}

	got, err := bundle.DecodeManifest(payload)
	if err != nil {
		t.Fatalf("a %d-byte manifest whose descriptor is over 16 MiB: %v", len(payload), err)
	}
	if got.Capabilities[0].Notes != notes {
		t.Fatal("the descriptor read is not the one written")
	}

	for _, c := range []struct {
		name string
		data []byte
		lim  amp.Limits
		ok   bool
	}{
		{"a raised cap reads a 17 MiB descriptor", big, amp.Limits{MaxMessageSize: 32 << 20}, true},
		{"amp's default refuses it", big, amp.Limits{}, false},
		{"a lowered cap refuses a small descriptor", small, amp.Limits{MaxMessageSize: len(small) - 1}, false},
		{"a lowered cap reads what fits", small, amp.Limits{MaxMessageSize: len(small)}, true},
		{"a lowered string cap refuses long notes", big, amp.Limits{MaxMessageSize: 32 << 20, MaxStringLen: 1 << 20}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := capability.DecodeDescriptorLimits(c.data, c.lim)
			if c.ok {
				again, eerr := d.Encode()
				if err != nil || eerr != nil || !bytes.Equal(again, c.data) {
					t.Fatalf("got %v, %v; want the descriptor back byte for byte", err, eerr)
				}
				return
			}
			if amp.CodeOf(err) != amp.CodeInvalidMessage {
				t.Fatalf("got %v, want 1001 for an item over the caller's cap", err)
			}
		})
	}
	if _, err := capability.DecodeDescriptor(big); err == nil || amp.CodeOf(err) != amp.CodeInvalidMessage {
		t.Fatalf("DecodeDescriptor of 17 MiB: got %v, want amp's default cap, 1001", err)
	}
}
