package resolver

import (
	"errors"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Blobs are content-addressed ("<alg>:<hex>") and their keys are random, so
// a new blob lands between old ones. Were the bytes values of the blobs
// bucket, bbolt would rewrite the leaf of a neighbouring blob, with all its
// bytes, to insert the new key: measured, a 64 MiB import wrote 201 MiB.
// So each blob is a bucket of its own (blobs/<key>, holding the bytes under
// blobData); inserting one only rewrites the small bucket headers of its
// neighbours, and the bytes are written once (a small blob is inlined in
// its parent's leaf, where rewriting it costs little).
const blobData = "d"

// getBlob returns the bytes of blob k, valid only inside tx, or nil.
func getBlob(tx *bolt.Tx, k []byte) []byte {
	b := bucket(tx, bBlobs).Bucket(k)
	if b == nil {
		return nil
	}
	return b.Get([]byte(blobData))
}

// hasBlob reports whether blob k is stored.
func hasBlob(tx *bolt.Tx, k []byte) bool { return bucket(tx, bBlobs).Bucket(k) != nil }

// putBlob stores data as blob k.
func putBlob(tx *bolt.Tx, k, data []byte) error {
	b, err := bucket(tx, bBlobs).CreateBucket(k)
	if err != nil {
		return err
	}
	return b.Put([]byte(blobData), data)
}

// deleteBlob deletes blob k (nothing when it is not there).
func deleteBlob(tx *bolt.Tx, k []byte) error {
	err := bucket(tx, bBlobs).DeleteBucket(k)
	if err == nil || errors.Is(err, berrors.ErrBucketNotFound) {
		return nil
	}
	return err
}

// forEachBlob calls fn with every blob's key and bytes. A key of the blobs
// bucket that is not a blob bucket is reported with nil bytes.
func forEachBlob(tx *bolt.Tx, fn func(k, data []byte) error) error {
	blobs := bucket(tx, bBlobs)
	return blobs.ForEach(func(k, v []byte) error {
		if v != nil { // a plain value: not a blob bucket
			return fn(k, nil)
		}
		b := blobs.Bucket(k)
		return fn(k, b.Get([]byte(blobData)))
	})
}
