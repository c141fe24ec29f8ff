package mirror

import (
	"crypto/ed25519"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestRefusedFilesAreNotDownloadedAgainByEachCLISyncRun: attack: a hostile
// mirror lists genuine files the store refuses (here bundles of a scope
// their signer is not trusted for, up to the index's caps, each up to
// 1 GiB). 'ampbundle sync' with no agent running opens the store
// read-write for each run (openSyncStore), a timer runs it every few
// minutes. A random epoch per read-write Open (review 14) had RefusedAt
// answer no refusal of an earlier run, so each run downloaded, verified
// and offered every refused file again: the download half of
// MIRROR-11/12's bar ("a run with the same index as the one before
// downloads nothing") was lost for every host that syncs without an
// agent. The epoch is now a digest of the options a verdict may depend on
// (MIRROR-13): run 2 downloads nothing.
func TestRefusedFilesAreNotDownloadedAgainByEachCLISyncRun(t *testing.T) {
	hm := newRepeatMirror(t)
	for i := range 3 {
		hm.bundle(t, signedBundle(t, fmt.Sprintf("org.example.x%d", i), otherKey))
	}
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t)
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"com.vendor"}); err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	var fetched []int32
	for run := range 3 {
		f0 := hm.fetches.Load()
		rep, err := syncOnce(t, s, ts.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 && rep.Count(OutcomeImported) != 0 {
			t.Fatalf("test setup: a bundle of another scope was imported: %+v", rep.Items)
		}
		fetched = append(fetched, hm.fetches.Load()-f0)
		// The run ends; the next is another process opening the store
		// read-write with the same options ('ampbundle sync' from a timer).
		s.Close()
		if s, err = resolver.Open(path, resolver.Options{Now: func() time.Time { return testNow }}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if fetched[0] != 3 || fetched[1] != 0 || fetched[2] != 0 {
		t.Fatalf("files downloaded per run, the store reopened between runs with the same options: %v; want [3 0 0] "+
			"(each CLI sync run downloads and verifies every refused file again, up to 1 GiB each)", fetched)
	}
}
