package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/capability"
)

// notesDraft is smallDraft whose descriptor carries notes of n bytes: a
// manifest whose size the test chooses.
func notesDraft(t *testing.T, n int) *Draft {
	d := smallDraft(t)
	d.Capabilities[0].Notes = strings.Repeat("n", n)
	return d
}

// signedLen writes d signed by k and returns the length of its item 0.
func signedLen(t *testing.T, d *Draft, k ed25519.PrivateKey) int {
	t.Helper()
	in, err := Inspect(bytes.NewReader(build(t, d, k)), 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(in.SignedManifest)
}

// notesFor returns the length of notes that makes the signed manifest of
// notesDraft, signed by k, exactly target bytes long (a text of 64 KiB
// or more has a head of one size, so item 0 grows byte for byte).
func notesFor(t *testing.T, k ed25519.PrivateKey, target int) int {
	const probe = 1 << 20
	return probe + target - signedLen(t, notesDraft(t, probe), k)
}

// TestManifestNoReaderTakesIsNeverWritten: the attack is on the
// publisher's own pipeline, as in BUNDLE-24. Validate counts the
// manifest's lists but not what every reader applies to the payload it
// decodes: item 0 at most 16 MiB (docs/FORMAT.md §6), nesting at most 32
// and at most 10,000 pairs a map (DecodeManifest). A descriptor's notes
// of 17 MiB (or 70,000 artifacts with 250-byte keys, 23.5 MB), an
// extension field of a capability.json nested 30 deep (which the JSON
// reader of build accepts), or one holding a map of 10,001 pairs: Write
// signed each and returned success, and every reader (Inspect, NewReader,
// every store) refused the file, limit_exceeded or malformed_bundle, once
// it had crossed the air gap. A co-signature added to a manifest a few
// bytes under the cap did the same. Now Write and Cosign refuse them,
// limit_exceeded, before a byte is written; the largest manifest a
// reader takes is still written (docs/SPEC-DECISIONS.md BUNDLE-27).
func TestManifestNoReaderTakesIsNeverWritten(t *testing.T) {
	k := testKey(1)
	// As bundlebuild reads a capability.json: the references completed,
	// then capability.DecodeDescriptorJSON (Write completes them again).
	ref := func(file string) string {
		return `{"bundle_id":"org.example.demo","artifact_key":"capabilities/org.example.demo.echo/1.0.0/` + file +
			`","hash_alg":"sha-256","hash":"` + strings.Repeat("0", 64) + `","media_type":"application/schema+json"}`
	}
	deep, err := capability.DecodeDescriptorJSON([]byte(`{"id":"org.example.demo.echo:1.0.0","name":"org.example.demo.echo","version":"1.0.0",` +
		`"input_schema":` + ref("input.schema.json") + `,"output_schema":` + ref("output.schema.json") +
		`,"x-deep":` + strings.Repeat("[", 30) + `1` + strings.Repeat("]", 30) + `}`))
	if err != nil {
		t.Fatalf("the JSON reader of capability.json refuses the deep field: %v", err)
	}
	wide := map[string]int{}
	for i := range 10_001 {
		wide[fmt.Sprintf("k%d", i)] = i
	}
	wideRaw, err := cbor.Marshal(wide)
	if err != nil {
		t.Fatal(err)
	}
	atCap := notesFor(t, k, DefaultMaxManifestSize)
	for _, tc := range []struct {
		name    string
		draft   func(*Draft)
		refused bool
	}{
		{"notes of 17 MiB", func(d *Draft) { d.Capabilities[0].Notes = strings.Repeat("n", 17<<20) }, true},
		{"signed manifest one byte over 16 MiB", func(d *Draft) { d.Capabilities[0].Notes = strings.Repeat("n", atCap+1) }, true},
		{"extension field of a capability.json nested 30 deep", func(d *Draft) { d.Capabilities[0] = deep }, true},
		{"extension field holding a map of 10,001 pairs", func(d *Draft) {
			d.Capabilities[0].Extra = map[string]cbor.RawMessage{"x-wide": wideRaw}
		}, true},
		{"signed manifest of exactly 16 MiB", func(d *Draft) { d.Capabilities[0].Notes = strings.Repeat("n", atCap) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := smallDraft(t)
			tc.draft(d)
			var buf bytes.Buffer
			_, err := Write(&buf, d, []ed25519.PrivateKey{k}, WriteOptions{})
			if !tc.refused {
				if err != nil {
					t.Fatalf("a manifest every reader takes was refused: %v", err)
				}
				if _, _, err := readAll(buf.Bytes(), trust(k, "*"), testNow); err != nil {
					t.Fatalf("what Write signed does not read back: %v", err)
				}
				return
			}
			if err == nil {
				_, ierr := Inspect(bytes.NewReader(buf.Bytes()), 0)
				t.Fatalf("Write signed a manifest no reader takes (the reader says: %v)", ierr)
			}
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("got %v, want %s", err, ErrTooLarge)
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes written before the refusal", buf.Len())
			}
		})
	}

	t.Run("a co-signature that takes the manifest over 16 MiB", func(t *testing.T) {
		file := build(t, notesDraft(t, notesFor(t, k, DefaultMaxManifestSize-10)), k)
		var out bytes.Buffer
		_, err := Cosign(&out, bytes.NewReader(file), testKey(2), CosignOptions{Now: func() time.Time { return testNow }})
		if err == nil {
			_, ierr := Inspect(bytes.NewReader(out.Bytes()), 0)
			t.Fatalf("Cosign wrote a manifest no reader takes (the reader says: %v)", ierr)
		}
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("got %v, want %s", err, ErrTooLarge)
		}
		if out.Len() != 0 {
			t.Fatalf("%d bytes written before the refusal", out.Len())
		}
	})
}

// overNestedBundle is the file Write signed before BUNDLE-27 for a
// descriptor with an extension field nested 30 deep: genuine signatures
// over a manifest every reader refuses (malformed_bundle). A seed of
// FuzzReader.
func overNestedBundle(t testing.TB, k ed25519.PrivateKey) []byte {
	small := build(t, smallDraft(t), k)
	in, err := Inspect(bytes.NewReader(small), 0)
	if err != nil {
		t.Fatal(err)
	}
	var v any = 1
	for range 30 {
		v = []any{v}
	}
	raw, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	m := in.Manifest
	m.Capabilities[0].Extra = map[string]cbor.RawMessage{"x-deep": raw}
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
