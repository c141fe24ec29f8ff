package resolver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestDeltaResultNamesTheBaseCopyTheStoreHeld
//
// Attack (misreport, BUNDLE-21): a hostile mirror delivers a copy of the
// publisher's base release first (a throwaway key's signature added); the
// store keeps it, and the publisher's delta now applies over that copy.
// The import result (ampbundle import's output, "base" in --json) named
// the base by the header's manifest SHA-256, the publisher's file, which
// this store never held: an operator tracing which installed file
// supplied the omitted bytes was pointed at the wrong one. It names the
// SHA-256 of the signed manifest of the copy the store took the bytes
// from (BUNDLE-21).
func TestDeltaResultNamesTheBaseCopyTheStoreHeld(t *testing.T) {
	publisher, throwaway := sampleKey(t, "example-publisher"), testKeyN(94)
	v1 := variant(t, 1, nil)
	copyV1 := resigned(t, v1, publisher, throwaway)
	delta, _ := deltaOf(t, v1, 3, changeOneSchema)
	in, err := bundle.Inspect(bytes.NewReader(copyV1), 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(in.SignedManifest)
	kept := hex.EncodeToString(sum[:])[:16]
	s := newStore(t)
	mustImport(t, s, copyV1)
	res, err := importBytes(t, s, delta, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Delta == nil || !strings.Contains(res.Delta.Base, kept) {
		t.Fatalf("the result names base %q; the store took the bytes from the copy with manifest sha256 %s…", res.Delta.Base, kept)
	}
}
