package mirror

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAnotherMirrorsPartialHeadRefusesAGenuineFilePastTheCap: past
// MaxStoreRefusals a bundle file is judged by its head (MIRROR-18), and
// the spool names a partial file by bundle_id and SHA-256 only. A hostile
// mirror that lists an honest one's genuine file (its index is public) and
// cuts its answer after the head of a bundle of the same line and version
// signed by a key the host does not trust leaves that head in the spool;
// the honest mirror's next run, past the cap (a station holding several
// vendors' bundles), would refuse the genuine file from those bytes as
// not signed as the store requires, and remember the refusal for a day,
// renewed by every run of the hostile mirror. Should: bytes kept from an
// earlier download that fail the check are discarded and the mirror's own
// head read; the genuine file is imported.
func TestAnotherMirrorsPartialHeadRefusesAGenuineFilePastTheCap(t *testing.T) {
	own := ownKey(9)
	files := ownKeyBundles(t, own, MaxStoreRefusals, 0)
	genuine := paddedBundle(t, "org.example.z", testKey, 4096)
	url := urlOf(t, stationOf(t, []ed25519.PrivateKey{own, testKey}, append(files, genuine)...))
	s := agentStore(t) // trusts testKey only
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	forged := paddedBundle(t, "org.example.z", own, 4096)
	part := filepath.Join(spool, partName(IndexEntry{BundleID: "org.example.z", SHA256: sum(genuine)}))
	if err := os.WriteFile(part, forged[:len(forged)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, url, func(o *SyncOptions) { o.Now = func() time.Time { return testNow } })
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range rep.Items {
		if it.BundleID == "org.example.z" {
			found = true
			if it.Outcome != OutcomeImported {
				t.Fatalf("the genuine file, past the cap, after another mirror's partial head: %+v", it)
			}
		}
	}
	if !found {
		t.Fatalf("the genuine file is not in the report: %+v", rep.Items)
	}
}
