package mirror

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestKeptHeadsRefusedOnTheirFirstTryAreReadFree: the heads refused in a
// run may take the run's budget past their first 64 KiB (MIRROR-23), but a
// head read on from bytes kept in the spool (a head cut off in an earlier
// run, or another mirror's partial file of the same name) that was refused
// was discarded and read again from this mirror without being charged:
// only the second read counted. A mirror that cuts each of its large
// untrusted heads once (or plants their first bytes through another
// mirror) had every one of them read whole, for free, in the next run, and
// judged twice. Each head refused is now charged, on its first try too.
func TestKeptHeadsRefusedOnTheirFirstTryAreReadFree(t *testing.T) {
	const n, arts, pad, kept = 10, 1500, 256 << 10, bundleHeadBytes
	own := ownKey(127)
	var files [][]byte
	for i := range n {
		files = append(files, manyArtifactsBundle(t, fmt.Sprintf("org.example.kept%d", i), own, arts, pad))
	}
	head := signedManifestSize(t, files[0])
	budget := 8 * head
	cb := stationOf(t, []ed25519.PrivateKey{own}, files...)
	s := agentStore(t)
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		e := IndexEntry{BundleID: fmt.Sprintf("org.example.kept%d", i), SHA256: sum(f)}
		if err := os.WriteFile(filepath.Join(spool, partName(e)), f[:kept], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := syncWithHooks(t, s, urlOf(t, cb), syncHooks{headBudget: budget}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The budget, the read that spent it (at most four times a manifest),
	// and the first 64 KiB of each head read again after its kept bytes
	// (at most one a charged read: half the budget here).
	most := budget + budget/2 + 4*head
	if got := cb.n.Load(); got > most {
		t.Fatalf("one run downloaded %d bytes (most %d) of %d files, kept in the spool from byte %d, with %d-byte signed manifests no trusted key signs: their first reads were not charged: %+v", got, most, n, kept, head, rep.Items)
	}
}

// signedManifestSize is the size of the signed manifest file begins with,
// larger than a first head read.
func signedManifestSize(t *testing.T, file []byte) int64 {
	t.Helper()
	in, err := bundle.Inspect(bytes.NewReader(file), 0)
	if err != nil {
		t.Fatal(err)
	}
	head := int64(len(in.SignedManifest))
	if head <= bundleHeadBytes {
		t.Fatalf("a signed manifest of %d bytes: not larger than a first head read", head)
	}
	return head
}
