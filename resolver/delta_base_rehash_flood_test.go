package resolver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestDeltaBaseRehashFlood: a delta whose manifest lists one large
// base blob under many keys. Attack (a malicious insider who signs a
// release; a hostile mirror then serves it): version 2 lists the base's
// 4 MiB artifact under 512 more keys; the delta omits them all, so the
// file is a manifest and no artifact bytes. Before BUNDLE-13 the import re-hashed the
// same base blob once per key (fromBase calls VerifyFromBase with rehash
// for every omitted artifact): 2 GiB of hashing, and as much again for
// every import of such a file, out of proportion to the file and to the
// base. It should cost one re-hash per distinct blob: the bytes are taken
// by content address, so the same blob is the same bytes, checked once in
// an import (a DID document is likewise parsed once per blob).
//
// Time bound: the difference between the import with re-hashing and the
// same import with SkipBaseRehash (the fixed cost of 513 index records,
// transactions, fsync) must stay under 32 re-hashes of the blob (measured
// on this machine first) plus 250 ms: generous for one re-hash per blob,
// while the flood needs 513.
func TestDeltaBaseRehashFlood(t *testing.T) {
	const size, copies = 4 << 20, 512
	k := sampleKey(t, "example-publisher")
	keys := []ed25519.PrivateKey{k}
	big := bytes.Repeat([]byte("delta base rehash flood, one blob"), size/33)
	sum := sha256.Sum256(big)
	draft := func(version uint64, n int) *bundle.Draft {
		d := scaleDraft(version, 0, 0)
		d.Artifacts = append(d.Artifacts, bundle.BytesSource("blobs/big.bin", "application/octet-stream", big))
		for i := range n {
			// The hash is given: the writer neither reads nor hashes
			// an artifact the delta omits.
			d.Artifacts = append(d.Artifacts, bundle.Source{Key: fmt.Sprintf("blobs/copy-%05d.bin", i), MediaType: "application/octet-stream",
				Size: int64(len(big)), Hash: sum[:], Open: func() (io.ReadCloser, error) { return nil, errors.New("an omitted artifact is not read") }})
		}
		return d
	}
	var base bytes.Buffer
	if _, err := bundle.Write(&base, draft(1, 0), keys, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	in, err := bundle.Inspect(bytes.NewReader(base.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	var delta bytes.Buffer
	if _, _, err := bundle.WriteDelta(&delta, draft(2, copies), keys, in.SignedManifest, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	one := fastestOf(t, func() { sha256.Sum256(big) })
	timed := func(skip bool) time.Duration {
		return timedDeltaImport(t, base.Bytes(), delta.Bytes(), skip, copies+1)
	}
	skipped := timed(true)
	rehashed := timed(false)
	bound := 32*one + 250*time.Millisecond
	if extra := rehashed - skipped; extra > bound {
		t.Fatalf("re-hashing the base took %v more than relying on it (%v vs %v) for a %d-byte delta; bound %v (32 re-hashes of the %d-byte blob at %v each, plus 250ms): each of %d keys re-hashes the same blob",
			extra, rehashed, skipped, delta.Len(), bound, len(big), one, copies+1)
	}
}

// fastestOf is the shortest of three runs of f.
func fastestOf(t testing.TB, f func()) time.Duration {
	t.Helper()
	one := time.Duration(1<<62 - 1)
	for range 3 {
		start := time.Now()
		f()
		one = min(one, time.Since(start))
	}
	return one
}

// timedDeltaImport imports base into a new store, then times the import
// of delta, which must take at least fromBase artifacts from the base.
func timedDeltaImport(t testing.TB, base, delta []byte, skip bool, fromBase int) time.Duration {
	t.Helper()
	s := newStore(t)
	mustImport(t, s, base)
	start := time.Now()
	res, err := s.Import(context.Background(), bytes.NewReader(delta), ImportOptions{SkipBaseRehash: skip})
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Delta == nil || res.Delta.FromBase < fromBase {
		t.Fatalf("delta import: %+v %+v", res, res.Delta)
	}
	return el
}
