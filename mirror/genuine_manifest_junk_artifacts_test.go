package mirror

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// TestGenuineManifestWithJunkArtifactsCostsOneDownloadARun: a
// hostile mirror (no key of its own) takes the genuine signed manifest of
// each of a trusted publisher's bundle lines the host has not installed
// and serves it followed by artifact bytes of its own (up to the 1 GiB a
// bundle file may take), listing the SHA-256 of what it serves. The file
// matches the index, parses, and its signature is the publisher's: it is
// downloaded in full and offered, and the store reads it whole before it
// refuses it (an artifact's hash differs from the signed manifest's).
// That verdict says the mirror served a file no honest mirror serves (a
// mirror exports each file checking every artifact hash), yet the next
// listed line is downloaded the same way: one run downloads every listed
// line, at fresh bytes (so fresh SHA-256s) every run. Should: a bundle the
// store refuses because its bytes contradict its own signed manifest is
// the mirror serving a file other than a genuine one, and fails the list
// as index_mismatch does (MIRROR-15).
func TestGenuineManifestWithJunkArtifactsCostsOneDownloadARun(t *testing.T) {
	const n = 5
	hm := newRepeatMirror(t)
	for i := range n {
		f := signedBundle(t, fmt.Sprintf("org.example.j%d", i), testKey)
		f[len(f)-3] ^= 0x01 // in the last artifact
		hm.bundle(t, f)
	}
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hm.fetches.Load(); got != 1 {
		t.Fatalf("one run downloaded %d of %d listed files after the first contradicted its own signed manifest, want 1: %+v", got, n, rep.Items)
	}
}
