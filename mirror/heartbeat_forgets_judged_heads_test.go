package mirror

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestHeartbeatEachRunHasEveryRefusedHeadReadAgain: a mirror lists bundle
// files no trusted key signs, and the site's store changes between runs
// without its trust changing (a heartbeat applied each run, as a station
// publishing one a day makes every sync apply). A head the trust refused
// was remembered at the store's generation, so every run after a heartbeat
// read every such head again (64 KiB each, up to 16 MiB). The verdict
// depends on the file and the trust it was judged by, not on the
// generation: it now holds while the trust is the same, and a change of
// the trust (here the signer trusted) still has the file judged again.
func TestHeartbeatEachRunHasEveryRefusedHeadReadAgain(t *testing.T) {
	own := ownKey(128)
	var files [][]byte
	for i := range 3 {
		files = append(files, paddedBundle(t, fmt.Sprintf("org.example.own%d", i), own, 1<<10))
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, site *resolver.Store)
		// read: run 2 reads the heads again (and imports the files).
		read bool
	}{
		{"a heartbeat applied", func(t *testing.T, site *resolver.Store) {
			if _, err := site.ApplyHeartbeat(signedHeartbeat(t, 1, "2026-11-20T11:00:00Z", testKey)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the signer trusted", func(t *testing.T, site *resolver.Store) {
			if err := site.TrustAdd("own", own.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cb := stationOf(t, []ed25519.PrivateKey{own}, files...)
			url := urlOf(t, cb)
			site := agentStore(t, testBundle(t, 1))
			rep, err := syncOnce(t, site, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range rep.Items {
				if it.Error != string(bundle.ErrUntrustedKey) {
					t.Fatalf("run 1: %+v; want each refused %s", it, bundle.ErrUntrustedKey)
				}
			}
			gen := site.Generation()
			tc.change(t, site)
			if site.Generation() == gen {
				t.Fatal("the store's generation did not move")
			}
			before := cb.n.Load()
			if rep, err = syncOnce(t, site, url, nil); err != nil {
				t.Fatal(err)
			}
			read := cb.n.Load() - before
			if !tc.read && read != 0 {
				t.Fatalf("run 2 read %d bytes of heads run 1 refused, the trust unchanged: %+v", read, rep.Items)
			}
			if tc.read && rep.Count(OutcomeImported) != len(files) {
				t.Fatalf("run 2, the signer trusted since: %+v; want the files judged again and imported", rep.Items)
			}
		})
	}
}
