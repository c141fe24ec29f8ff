package resolver

import (
	"bytes"
	"io"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// Export writes an installed bundle to w exactly as it was imported: the
// signed manifest as received, then every artifact in manifest order. Each
// artifact is checked against its hash on the way out; a store that has
// been tampered with fails (5002 hash_mismatch) rather than exporting
// altered bytes, and one whose stored signed manifest carries a signature
// that does not verify (bad_signature, docs/SPEC-DECISIONS.md TRUST-20) is
// not exported at all. On failure w holds a partial file, which the caller must
// discard.
func (s *Store) Export(bundleID string, w io.Writer) error {
	err := s.db.View(func(tx *bolt.Tx) error {
		rec, err := installedRecord(tx, bundleID)
		if err != nil {
			return err
		}
		in, err := bundle.Inspect(bytes.NewReader(rec.Signed), storedManifestCap(rec.Signed))
		if err != nil {
			return fail(ErrStoreIO, "the stored manifest of %s does not decode", bundleID).WithCause(err)
		}
		// Never relay a file other sites refuse: a copy an earlier build
		// installed with a forged co-signature (TRUST-20) is refused
		// here, whatever still serves from it.
		if err := verifyStoredSignatures(rec.Signed); err != nil {
			return fail(amp.NameOf(err), "bundle %s is not exported: its stored signed manifest carries a signature that does not verify (%s); import the publisher's file of this release to replace it", bundleID, amp.SafeMessage(err))
		}
		if _, err := w.Write(rec.Signed); err != nil {
			return fail(ErrStoreIO, "cannot write the export").WithCause(err)
		}
		for _, a := range in.Manifest.Artifacts {
			raw := bucket(tx, bIndex).Get(key2(bundleID, a.Key))
			if raw == nil {
				return unavailable(ErrArtifactMissing, "bundle %s has no artifact %s", bundleID, a.Key)
			}
			var ir indexRecord
			if err := decode(raw, &ir); err != nil {
				return err
			}
			data := getBlob(tx, []byte(ir.Blob))
			if data == nil {
				return unavailable(ErrBlobUnreadable, "the bytes of %s in bundle %s are missing from the store", a.Key, bundleID)
			}
			if err := checkHash(data, a.HashAlg, a.Hash, bundleID, a.Key); err != nil {
				return err
			}
			if _, err := w.Write(bundle.ByteStringHead(uint64(len(data)))); err != nil {
				return fail(ErrStoreIO, "cannot write the export").WithCause(err)
			}
			if _, err := w.Write(data); err != nil {
				return fail(ErrStoreIO, "cannot write the export").WithCause(err)
			}
		}
		return nil
	})
	if err != nil {
		return amp.AsError(err)
	}
	return nil
}

// storedManifestCap is the cap a stored signed manifest is read back
// under: one byte over its length, so a record grown since it was
// written is refused, but never over bundle.DefaultMaxManifestSize,
// the most the store imports and the most the bundle reader lets a
// caller set (docs/SPEC-DECISIONS.md BUNDLE-33): a manifest of exactly
// that size is read under the default itself.
func storedManifestCap(signed []byte) int64 {
	return min(int64(len(signed))+1, bundle.DefaultMaxManifestSize)
}
