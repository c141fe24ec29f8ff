package mirror

import (
	"bytes"
	"crypto/ed25519"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestStatementFailedFirstBlocksTheRestForever: a mirror whose
// index lists, first, a statement it serves otherwise (a damaged file, or
// a hostile mirror's junk: index_mismatch), or that it fails to serve (an
// error status), then a genuine revocation of an installed bundle. Since
// MIRROR-15 the failed statement stops the rest of the list for the run
// (mirrorFailed), but, unlike a bundle (then tried last), it is tried first
// again on the next run, and every run: the revocation behind it is never
// applied, and the revoked bundle keeps being served, on every run for as
// long as the one file stays bad. Should: the revocation is applied by
// the second run (MIRROR-16: the failed statement was tried last; since
// MIRROR-29 it is tried in its place and, served otherwise again, passed
// over).
func TestStatementFailedFirstBlocksTheRestForever(t *testing.T) {
	hm := newRepeatMirror(t)
	junk := strangerRevocation(t, 9)
	hm.statement(junk)
	hm.files[hm.ix.Statements[0].Href] = bytes.Repeat([]byte{'x'}, len(junk)) // not the listed bytes
	hm.statement(revokedEcho1(t, testKey))
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	if run := runsUntil(t, s, ts.URL, func(*SyncReport) bool { return echoRevoked(t, s) }); run == 0 || run > 2 {
		t.Fatalf("the genuine revocation listed after one statement the mirror served otherwise than listed was applied by run %d of 3 (0: never), want by run 2: the failed statement is tried first on every run", run)
	}
}

// TestHeartbeatFailedFirstBlocksTheRestForever: the same for
// heartbeats: one the mirror serves otherwise than listed (for an
// installed line listed first) stops the rest on every run, so the
// heartbeat of another installed line (a freshness statement a host
// needs to notice a freeze) is never applied. Should: tried last next run.
func TestHeartbeatFailedFirstBlocksTheRestForever(t *testing.T) {
	hm := newRepeatMirror(t)
	bad := signedHeartbeat(t, 5, "2026-11-20T10:00:00Z", testKey)
	hm.heartbeat(t, bad)
	hm.ix.Heartbeats[0].BundleID = "org.example.aaa" // listed for another installed line: the file says echo
	good := signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey)
	hm.heartbeat(t, good)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1), signedBundle(t, "org.example.aaa", testKey))
	applied := func(rep *SyncReport) bool {
		return slices.ContainsFunc(rep.Heartbeats, func(h HeartbeatItem) bool {
			return h.BundleID == "org.example.echo" && h.Outcome == OutcomeImported
		})
	}
	if run := runsUntil(t, s, ts.URL, applied); run == 0 || run > 2 {
		t.Fatalf("the genuine heartbeat listed after one the mirror served otherwise than listed was applied by run %d of 3 (0: never), want by run 2", run)
	}
}

// runsUntil syncs s from url up to three times and returns the run after
// which done holds, 0 when none.
func runsUntil(t *testing.T, s *resolver.Store, url string, done func(*SyncReport) bool) int {
	t.Helper()
	for run := 1; run <= 3; run++ {
		rep, err := syncOnce(t, s, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if done(rep) {
			return run
		}
		t.Logf("run %d: %+v %+v", run, rep.Statements, rep.Heartbeats)
	}
	return 0
}

// TestTrustChainCompletesAfterItsFirstStatementFailedOnce: a mirror fails
// the first statement of a trust chain once (a damaged answer); a
// transient failure delays the chain, and never leaves it incomplete.
// (MIRROR-16 tried it last, after the rest of the chain, refused
// rotation_gap, and completed the chain a run later; since MIRROR-29 the
// next run tries it in its place and applies the chain whole.)
func TestTrustChainCompletesAfterItsFirstStatementFailedOnce(t *testing.T) {
	k2 := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{21}, ed25519.SeedSize))
	k3 := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{22}, ed25519.SeedSize))
	s1 := rotationAfter(t, nil, 1, "second", k2, testKey)
	s2 := rotationAfter(t, s1, 2, "third", k3, k2)
	hm := newRepeatMirror(t)
	hm.statement(s1)
	hm.statement(s2)
	href := hm.ix.Statements[0].Href
	hm.files[href] = bytes.Repeat([]byte{'x'}, len(s1)) // damaged once
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	for run := 1; run <= 3; run++ {
		if _, err := syncOnce(t, s, ts.URL, nil); err != nil {
			t.Fatal(err)
		}
		hm.files[href] = s1 // served whole from the second run on
	}
	if chains, _ := s.TrustChains(); chains["org.example"] != 2 {
		t.Fatalf("the trust chain after three runs, its first statement failed in the first: %v, want org.example at 2", chains)
	}
}
