package resolver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// TestDeltaDIDReparseFlood: a delta whose manifest lists one
// large DID document of the base under many keys, imported with
// --skip-base-rehash. Attack (a malicious insider who signs a release; a
// hostile mirror serves it): version 2 lists the base's 240 KiB DID
// document under 256 more keys and the delta omits them all. A DID
// document taken from the base is re-hashed and parsed for its scope
// whatever the operator chose (docs/FORMAT.md §12.3), so before BUNDLE-13 every key
// costs a SHA-256 and two JSON parses of the same blob (VerifyFromBase's
// scope check, then fromBase's own parse): seconds of CPU from a file of a
// few hundred KiB, and --skip-base-rehash, the operator's way to make a
// delta import cheap, does not help. It should cost one check per distinct
// blob: the same blob is the same bytes, and its DID and scope verdict
// follow from them and the bundle's signers.
//
// What is counted: the base blobs the import checks (Store.baseChecked,
// one VerifyFromBase and DID parse each). The flood must check no more of
// them than its twin, the same delta without the 256 extra keys: one
// check per distinct blob. Before BUNDLE-13 it checked 257 more, one per
// key. The import's time is logged.
func TestDeltaDIDReparseFlood(t *testing.T) {
	const copies = 256
	k := sampleKey(t, "example-publisher")
	keys := []ed25519.PrivateKey{k}
	orig, err := os.ReadFile(filepath.Join(samplesDir, "translate", "dids", "translator.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Padding the DID core parser skips: 240 KiB, under the 256 KiB cap.
	pad := `"x-padding":[` + strings.TrimSuffix(strings.Repeat("0,", 120<<10), ",") + `],`
	doc := append([]byte("{"+pad), bytes.TrimPrefix(bytes.TrimSpace(orig), []byte("{"))...)
	if _, err := amp.ParseDIDDocument(doc); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(doc)
	edit := func(n int) func(d *bundle.Draft) {
		return func(d *bundle.Draft) {
			replaceArtifact(d, "dids/translator.json", doc)
			for i := range n {
				// The hash is given: the writer neither reads nor
				// hashes an artifact the delta omits.
				d.Artifacts = append(d.Artifacts, bundle.Source{Key: fmt.Sprintf("dids/copy-%05d.json", i), MediaType: bundle.MediaTypeDID,
					Size: int64(len(doc)), Hash: sum[:], Open: func() (io.ReadCloser, error) { return nil, errors.New("an omitted artifact is not read") }})
			}
		}
	}
	base := variant(t, 1, edit(0))
	in, err := bundle.Inspect(bytes.NewReader(base), 0)
	if err != nil {
		t.Fatal(err)
	}
	var delta bytes.Buffer
	d2 := translateDraftAt(t, 2)
	edit(copies)(d2)
	if _, _, err := bundle.WriteDelta(&delta, d2, keys, in.SignedManifest, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	var twin bytes.Buffer
	d2 = translateDraftAt(t, 2)
	edit(0)(d2)
	if _, _, err := bundle.WriteDelta(&twin, d2, keys, in.SignedManifest, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, twinChecked := deltaImport(t, base, twin.Bytes(), true, 1)
	el, checked := deltaImport(t, base, delta.Bytes(), true, copies+1)
	t.Logf("base blobs checked with --skip-base-rehash: %d with %d keys on the did document, %d without; import %v; one check of the %d-byte document (a SHA-256 and a parse) %v",
		checked, copies+1, twinChecked, el, len(doc), fastestOf(t, func() {
			sha256.Sum256(doc)
			amp.ParseDIDDocument(doc)
		}))
	if twinChecked == 0 || checked > twinChecked {
		t.Fatalf("importing a %d-byte delta with --skip-base-rehash checked %d base blobs, its twin without the extra keys %d: each of %d keys re-hashes and re-parses the same blob",
			delta.Len(), checked, twinChecked, copies+1)
	}
}

// translateDraftAt is the translate sample's draft at version.
func translateDraftAt(t testing.TB, version uint64) *bundle.Draft {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "translate"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(k)})
	if err != nil {
		t.Fatal(err)
	}
	d.Version = version
	return d
}
