package mirror

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestRevokedVersionCopyDownloadedWholeAtEachStoreChange: a
// revocation statement revoked the installed version itself, so no copy
// of it can ever stand (the store refuses it, revoked, whoever signs it).
// A mirror that still lists the publisher's file of that version (4 MiB;
// its signatures pass the store's trust, which does not name revoked
// versions) costs the site the whole file at every store change, only to
// be refused revoked. Sync cannot tell this install from one whose
// signer was revoked: resolver.Bundle says why in prose only. What should
// happen: nothing downloaded (refused revoked, the version itself is).
func TestRevokedVersionCopyDownloadedWholeAtEachStoreChange(t *testing.T) {
	const size = 4 << 20
	published := largeEchoBundle(t, size)
	cb := stationOf(t, []ed25519.PrivateKey{testKey}, published)
	url := urlOf(t, cb)
	site := agentStore(t, published)
	if res, err := site.ApplyRevocation(signedRevocation(t, nil, []bundle.BundleVersion{{BundleID: "org.example.echo", Version: 1}}, testKey)); err != nil || len(res.FailedClosed) != 1 {
		t.Fatalf("revocation at the site: %+v, %v", res, err)
	}
	for run := 0; run < 2; run++ {
		if run > 0 { // a store change: another key trusted
			other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(50 + run)}, ed25519.SeedSize))
			if err := site.TrustAdd("other", other.Public().(ed25519.PublicKey), []string{"org.other"}); err != nil {
				t.Fatal(err)
			}
		}
		before := cb.n.Load()
		it := syncItem(t, site, url)
		if it.Outcome != OutcomeRefused {
			t.Fatalf("run %d: %+v; want refused (the bundle fails closed)", run+1, it)
		}
		if got := cb.n.Load() - before; got > 1<<20 {
			t.Fatalf("run %d: %d bytes of bundle files downloaded for a copy of a revoked version (refused %s); want none", run+1, got, it.Error)
		}
	}
}
