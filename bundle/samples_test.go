package bundle

import (
	"crypto/ed25519"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/keyfile"
)

// sampleTrust trusts the test publisher keys of testdata/bundles/keys (and
// testKey(1)) for the given scopes.
func sampleTrust(tb testing.TB, scopes ...string) *Policy {
	tb.Helper()
	p := trust(testKey(1), scopes...)
	pubs, err := filepath.Glob(filepath.Join("..", "testdata", "bundles", "keys", "*.pub.pem"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range pubs {
		pub, err := keyfile.ParsePublic(f)
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		p.Keys = append(p.Keys, TrustedKey{Name: filepath.Base(f), Key: ed25519.PublicKey(pub), Scopes: scopes})
	}
	return p
}
