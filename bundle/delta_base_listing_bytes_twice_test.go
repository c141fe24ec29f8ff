package bundle

import (
	"bytes"
	"testing"
)

// TestDeltaOverABaseCopyListingItsBytesTwice
//
// Attack (availability, BUNDLE-21): a delta's base is now whatever copy
// of the base version the store holds, which need not be the file the
// writer read. CheckBase indexed the base's artifacts by content
// (hash_alg and hash) alone, the last key listing a content winning. A
// base copy that lists the omitted bytes with the right size and media
// type, and at a later key the same bytes under another media type (a
// payload another trusted signer, or an --allow-downgrade re-import, put
// under the base version), was judged not to carry them: the delta was
// refused delta_mismatch although its base lists every omitted artifact
// with the same hash_alg, hash, size and media_type (FORMAT.md §12.3),
// and the full bundle over it imports. Now every listing of the base
// counts (BUNDLE-22): the base is accepted; a base that lists the bytes
// only under another media type is still refused.
func TestDeltaOverABaseCopyListingItsBytesTwice(t *testing.T) {
	k := testKey(1)
	_, delta, _, _ := deltaPair(t, k)
	r, _, err := readDelta(delta, trust(k, "*"))
	if err != nil {
		t.Fatal(err)
	}
	baseOf := func(extraMedia string) []byte {
		d := smallDraft(t)
		d.CreatedAt = d.CreatedAt.Add(-1)
		// The output schema's bytes again, at a key sorted after it, under
		// another media type.
		d.Artifacts = append(d.Artifacts, BytesSource("zz/object.json", extraMedia, []byte(`{"type":"object"}`)))
		in, err := Inspect(bytes.NewReader(build(t, d, k)), 0)
		if err != nil {
			t.Fatal(err)
		}
		return in.SignedManifest
	}
	if err := r.CheckBase(baseOf("application/json")); err != nil {
		t.Fatalf("a base copy that lists every omitted artifact with the same bytes, one of them also under another media type: %v", err)
	}
	// Only another media type: still refused.
	d := smallDraft(t)
	d.Artifacts[1] = BytesSource(d.Artifacts[1].Key, "application/json", []byte(`{"type":"object"}`))
	d.Capabilities = nil
	d.Aliases = nil
	in, err := Inspect(bytes.NewReader(build(t, d, k)), 0)
	if err != nil {
		t.Fatal(err)
	}
	expectName(t, r.CheckBase(in.SignedManifest), ErrDeltaMismatch)
}
