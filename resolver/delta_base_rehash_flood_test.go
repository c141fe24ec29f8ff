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
// What is counted: the base blobs the import checks (Store.baseChecked,
// one VerifyFromBase each). The flood must check no more of them than
// its twin, the same delta without the 512 extra keys: one check per
// distinct blob. Before BUNDLE-13 it checked 513 more, one per key.
// Both imports' times are logged.
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

	var twin bytes.Buffer
	if _, _, err := bundle.WriteDelta(&twin, draft(2, 0), keys, in.SignedManifest, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	twinTook, twinChecked := deltaImport(t, base.Bytes(), twin.Bytes(), false, 1)
	skipped, _ := deltaImport(t, base.Bytes(), delta.Bytes(), true, copies+1)
	rehashed, checked := deltaImport(t, base.Bytes(), delta.Bytes(), false, copies+1)
	t.Logf("base blobs checked: %d with %d keys on the blob, %d without; import %v (%v with --skip-base-rehash, %v without the keys); one re-hash of the blob %v",
		checked, copies+1, twinChecked, rehashed, skipped, twinTook, fastestOf(t, func() { sha256.Sum256(big) }))
	if twinChecked == 0 || checked > twinChecked {
		t.Fatalf("the delta listing the %d-byte blob under %d keys checked %d base blobs, its twin without the extra keys %d: each key re-hashes the same blob",
			len(big), copies+1, checked, twinChecked)
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

// deltaImport imports base into a new store, then delta, which must take
// at least fromBase artifacts from the base; it returns how long the
// delta's import took (for the logs) and how many base blobs it checked
// (Store.baseChecked).
func deltaImport(t testing.TB, base, delta []byte, skip bool, fromBase int) (time.Duration, int64) {
	t.Helper()
	s := newStore(t)
	mustImport(t, s, base)
	before := s.baseChecked.Load()
	start := time.Now()
	res, err := s.Import(context.Background(), bytes.NewReader(delta), ImportOptions{SkipBaseRehash: skip})
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Delta == nil || res.Delta.FromBase < fromBase {
		t.Fatalf("delta import: %+v %+v", res, res.Delta)
	}
	return el, s.baseChecked.Load() - before
}
