package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http/httptest"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestAlteredCopyDoesNotHaveSyncSkipTheGenuineBundle: the operator
// imports a copy of a bundle altered on the way under the genuine file's
// SHA-256 ('ampbundle import' of a part index passes the whole file's
// SHA-256 from the signed index; the admin socket takes file_sha256 from
// its caller). The store refuses the bytes (hash_mismatch); it recorded
// the refusal under the GENUINE file's SHA-256, and the next sync skipped
// an honest mirror's genuine file for up to a day without downloading it:
// a security update withheld by a corrupted copy. The record now names
// only bytes the store read whole (MIRROR-13): the genuine file is
// downloaded and imported.
func TestAlteredCopyDoesNotHaveSyncSkipTheGenuineBundle(t *testing.T) {
	v2 := testBundle(t, 2)
	sum := sha256.Sum256(v2)
	altered := bytes.Clone(v2)
	altered[len(altered)-3] ^= 0x01 // inside the schema artifact
	s := agentStore(t, testBundle(t, 1))
	if _, err := s.Import(context.Background(), bytes.NewReader(altered), resolver.ImportOptions{FileSHA256: sum[:]}); err == nil {
		t.Fatal("the altered copy was imported")
	}
	hm := newRepeatMirror(t)
	hm.bundle(t, v2)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported || hm.fetches.Load() != 1 {
		t.Fatalf("the genuine version 2 from an honest mirror after an altered copy was refused: %+v, %d downloaded; want imported, 1",
			rep.Items, hm.fetches.Load())
	}
}

// TestStoreReadsWholeEveryBundleSyncOffersByDefault: a refused import
// is recorded (and so skipped by the next sync) only when the store read
// the file to its end, draining at most resolver.MaxRefusalDrain after
// the refusal (MIRROR-13). A default limit of sync's above it would have
// a hostile mirror's large refused bundles downloaded, and audited, on
// every run.
func TestStoreReadsWholeEveryBundleSyncOffersByDefault(t *testing.T) {
	if resolver.MaxRefusalDrain < DefaultMaxBundleBytes {
		t.Fatalf("resolver.MaxRefusalDrain %d < DefaultMaxBundleBytes %d", resolver.MaxRefusalDrain, DefaultMaxBundleBytes)
	}
}
