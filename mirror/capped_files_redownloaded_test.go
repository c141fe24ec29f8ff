package mirror

import (
	"crypto/ed25519"
	"fmt"
	"net/http/httptest"
	"testing"
)

// TestFilesPastTheRefusalCapAreNotDownloadedEveryRun: an honest
// station imports the bundles of several vendors; a host trusts their
// signer only for another scope (as a site trusting only its own vendor
// does), so the store refuses every one of them for its signatures. The
// first MaxStoreRefusals are offered, refused and recorded by the store
// (RefusedAt): the next run skips them. Those past the cap are refused
// too_many_refusals without being offered, and nothing remembers them: on
// every run (a timer every few minutes) each is downloaded (up to 1 GiB,
// up to MaxIndexBundles - 64 of them), verified and dropped again. Should:
// a file refused without being offered because no key the store trusts
// signs it as required is remembered by its SHA-256 at the store
// generation its trust was read at (the local refusals of MIRROR-12), so
// the next run at that generation downloads none of them; a trust change
// moves the generation and they are judged again (MIRROR-15).
func TestFilesPastTheRefusalCapAreNotDownloadedEveryRun(t *testing.T) {
	hm := newRepeatMirror(t)
	for i := range MaxStoreRefusals + 5 {
		hm.bundle(t, signedBundle(t, fmt.Sprintf("org.example.x%03d", i), otherKey))
	}
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t)
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"com.vendor"}); err != nil {
		t.Fatal(err)
	}
	runs := repeatSync(t, s, ts.URL, 2, &hm.fetches)
	if runs[0].fetches != MaxStoreRefusals+5 {
		t.Fatalf("first run: %s, want every listed file downloaded once", runs[0])
	}
	if runs[1].fetches != 0 || runs[1].entries != 0 {
		t.Fatalf("second run at the same store generation: %s; want nothing downloaded (first run: %s)", runs[1], runs[0])
	}
	// Remembered at the generation only: once the host trusts their
	// signer for their names, the next run downloads and imports them all.
	if err := s.TrustRemove("other"); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Count(OutcomeImported); n != MaxStoreRefusals+5 {
		t.Fatalf("after the trust changed: %d imported, want %d: %+v", n, MaxStoreRefusals+5, rep.Items)
	}
}
