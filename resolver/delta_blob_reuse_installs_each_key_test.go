package resolver

import (
	"bytes"
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestDeltaBlobReuseInstallsEachKey: an import checks each blob taken from
// the base once (BUNDLE-13) and reuses that check for every further key
// that names the blob. Attack (a malicious insider who signs a release):
// a release lists one blob under several keys, hoping the reuse installs
// the first key's record for the others, or loses what only the first
// check found (the DID of a DID document, the $id of a schema), so that
// the state after the delta differs from the state after the full bundle
// (docs/FORMAT.md §12: it must not). Version 2 keeps a DID document under
// two keys, a plain blob under three and the sample's schemas that repeat
// one blob; the delta omits them all. The store after the delta import must
// be exactly the store after the full import, with and without
// --skip-base-rehash, and the DID must resolve.
func TestDeltaBlobReuseInstallsEachKey(t *testing.T) {
	doc := mustRead(t, "translate/dids/translator.json")
	plain := bytes.Repeat([]byte("one blob under three keys\n"), 64)
	edit := func(d *bundle.Draft) {
		// The DID artifact is these very bytes (not a re-encoding).
		replaceArtifact(d, "dids/translator.json", doc)
		d.Artifacts = append(d.Artifacts,
			bundle.BytesSource("dids/translator-mirror.json", bundle.MediaTypeDID, doc),
			bundle.BytesSource("blobs/a.bin", "application/octet-stream", plain),
			bundle.BytesSource("blobs/b.bin", "application/octet-stream", plain),
			bundle.BytesSource("blobs/c.bin", "application/octet-stream", plain))
	}
	for _, skip := range []bool{false, true} {
		v1 := variant(t, 1, edit)
		delta, full := deltaOf(t, v1, 2, edit)
		viaDelta, viaFull := newStore(t), newStore(t)
		mustImport(t, viaDelta, v1)
		mustImport(t, viaFull, v1)
		res, err := importBytes(t, viaDelta, delta, ImportOptions{SkipBaseRehash: skip})
		if err != nil {
			t.Fatal(err)
		}
		if res.Delta == nil || res.Delta.FromBase != 15 {
			t.Fatalf("delta import result %+v %+v: want all 15 artifacts from the base", res, res.Delta)
		}
		mustImport(t, viaFull, full)
		if dumpBesidesAudit(t, viaDelta) != dumpBesidesAudit(t, viaFull) {
			t.Fatalf("skip=%v: the store after a delta that repeats blobs differs from the store after the full import", skip)
		}
		if _, err := viaDelta.ResolveDID(context.Background(), "did:web:translator.example.org"); err != nil {
			t.Fatalf("skip=%v: the did document taken from the base is not indexed: %v", skip, err)
		}
	}
}
