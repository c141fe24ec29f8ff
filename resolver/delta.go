package resolver

import (
	"bytes"
	"crypto/sha256"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// Importing a delta bundle (docs/FORMAT.md §12): the store must hold the
// release the delta names as its base (its bundle_id at its version); the
// artifacts the delta omits are the base's blobs, checked against the full
// manifest before they are referenced.
//
// The installed copy at the base version is the base whatever its signed
// manifest's hash (BUNDLE-21): the signature list is covered by no
// signature, so the copy a store kept first (BUNDLE-8) may differ from the
// publisher's file the delta names, and naming the base by that hash alone
// would refuse every delta of the line there. The base decides nothing
// about what is installed: each omitted artifact must be listed with the
// same bytes by the installed base's manifest (Reader.CheckBase) and is
// checked against the new signed manifest (fromBase).

// deltaBase is what an import of a delta takes from the installed base.
type deltaBase struct {
	// ref names the installed copy the import takes from: the delta's base
	// bundle_id and version, and the SHA-256 of the signed manifest the
	// store holds for them (which may differ from the header's, BUNDLE-21).
	// The commit requires that very copy still installed (checkBaseStill):
	// its blobs are what the import references.
	ref bundle.BaseRef
	// schemaIDs maps a blob of the base to the top-level $id of its schema
	// artifact: the same bytes declare the same $id, so an omitted schema
	// is indexed without parsing it again.
	schemaIDs map[string]string
	// taken holds what fromBase staged for each blob and media type it
	// has checked in this import. The bytes are taken by content address,
	// so every key that names the same blob names the same bytes: they are
	// re-hashed (and a DID document parsed and scope-checked) once per
	// distinct blob, not once per key (BUNDLE-13), however many keys of the
	// manifest list them.
	taken map[takenKey]staged
}

// takenKey is a blob of the base and the media type it was checked under:
// a DID document is checked for scope, other media types are not.
type takenKey struct{ blob, mediaType string }

// loadDeltaBase checks that the store holds the base release of the delta
// br reads (its bundle_id at its version; no other installed version is
// ever taken for it) listing every artifact the delta omits, and collects
// what the import takes from it.
func loadDeltaBase(tx *bolt.Tx, br *bundle.Reader) (*deltaBase, error) {
	d := br.Delta()
	raw := bucket(tx, bBundles).Get([]byte(d.Base.BundleID))
	if raw == nil {
		return nil, fail(bundle.ErrDeltaBaseMissing, "delta needs base %s installed; the store holds no version of %s (import the base or the full bundle first)", d.Base, d.Base.BundleID)
	}
	var rec bundleRecord
	if err := decode(raw, &rec); err != nil {
		return nil, err
	}
	if rec.Version != d.Base.Version {
		return nil, fail(bundle.ErrDeltaBaseMissing, "delta needs base %s installed; the store holds %s version %d; import the full bundle instead", d.Base, rec.BundleID, rec.Version)
	}
	if err := br.CheckBase(rec.Signed); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(rec.Signed)
	ref := bundle.BaseRef{BundleID: d.Base.BundleID, Version: d.Base.Version, ManifestSHA256: sum[:]}
	base := &deltaBase{ref: ref, schemaIDs: map[string]string{}, taken: map[takenKey]staged{}}
	prefix := key2(d.Base.BundleID, "")
	blobOf := map[string]string{}
	c := bucket(tx, bIndex).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var ir indexRecord
		if err := decode(v, &ir); err != nil {
			return nil, err
		}
		blobOf[string(k[len(prefix):])] = ir.Blob
	}
	c = bucket(tx, bSchemaIDs).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if blob, ok := blobOf[string(v)]; ok {
			base.schemaIDs[blob] = string(k[len(prefix):])
		}
	}
	return base, nil
}

// checkBaseStill repeats, inside the final transaction, that the installed
// base is the very copy the import was checked against: ref is
// deltaBase.ref, the copy loadDeltaBase found.
func checkBaseStill(tx *bolt.Tx, ref bundle.BaseRef) error {
	raw := bucket(tx, bBundles).Get([]byte(ref.BundleID))
	if raw == nil {
		return fail(bundle.ErrDeltaBaseMissing, "delta needs base %s installed; it was removed during the import", ref)
	}
	var rec bundleRecord
	if err := decode(raw, &rec); err != nil {
		return err
	}
	if sum := sha256.Sum256(rec.Signed); !bytes.Equal(sum[:], ref.ManifestSHA256) {
		return fail(bundle.ErrDeltaBaseMissing, "delta needs base %s installed; it was replaced during the import", ref)
	}
	return nil
}

// fromBase stages an artifact the delta omits: the base's blob with the
// artifact's content address, verified by the reader against the full
// signed manifest (size; hash unless skipRehash; DID scope). A blob already
// checked in this import under the same media type and size is not checked
// again: the same content address is the same bytes, and the DID and scope
// verdict follow from them and the bundle's signers (BUNDLE-13).
func (s *Store) fromBase(br *bundle.Reader, a *bundle.Artifact, base *deltaBase, skipRehash bool) (staged, error) {
	st := staged{entry: a.ArtifactEntry, blob: BlobKey(a.HashAlg, a.Hash)}
	tk := takenKey{blob: st.blob, mediaType: a.MediaType}
	if prev, ok := base.taken[tk]; ok && prev.entry.Size == a.Size {
		prev.entry = a.ArtifactEntry
		return prev, nil
	}
	s.baseChecked.Add(1)
	err := s.db.View(func(tx *bolt.Tx) error {
		data := getBlob(tx, []byte(st.blob))
		if data == nil {
			return fail(bundle.ErrDeltaBaseMissing, "the store lacks the bytes of %s that the delta takes from base %s", a.Key, base.ref)
		}
		if err := br.VerifyFromBase(a, data, !skipRehash); err != nil {
			return err
		}
		if a.MediaType == bundle.MediaTypeDID {
			doc, err := amp.ParseDIDDocument(data)
			if err != nil {
				return fail(bundle.ErrInconsistent, "artifact %s is not a valid did document", a.Key).WithCause(err)
			}
			st.did = doc.ID
		}
		return nil
	})
	if err != nil {
		return staged{}, amp.AsError(err)
	}
	if a.MediaType == bundle.MediaTypeSchema {
		st.schemaID = base.schemaIDs[st.blob]
	}
	base.taken[tk] = st
	return st, nil
}
