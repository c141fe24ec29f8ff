package trust_test

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
)

// TestARecountPerInstalledBundleDoesNotCopyEveryTrustedKey: a store
// written by an older build keeps no signers in its installed records,
// so a revocation's recount of each bundle a revoked key signed built
// the policy of the keys still vouching (remainingSigners) from every
// trusted key, growing it by append: with the 1,000 keys an authority
// may keep trusted (TRUST-25), about 300 KB more per recounted bundle
// under the store's write lock (docs/SPEC-DECISIONS.md TRUST-27). The
// bytes one more recounted bundle costs are measured (the difference
// between 2n and n bundles), not the time: at most 160 KB; before,
// about 380 to 410 KB, now about 80 to 100 KB.
// The verdicts are checked too: a bundle another signer still vouches
// for stays, one whose only signer is revoked fails closed.
func TestARecountPerInstalledBundleDoesNotCopyEveryTrustedKey(t *testing.T) {
	a := seedKey(44)
	minted := func(i int) ed25519.PrivateKey { return numberedKey(i, 11) }
	last := trust.MaxMintedKeys - 1
	cases := []struct {
		name       string
		signers    []ed25519.PrivateKey
		wantFailed bool
	}{
		{"another signer still vouches", []ed25519.PrivateKey{a, minted(last), minted(last - 1), minted(last - 2)}, false},
		{"the only signer is revoked", []ed25519.PrivateKey{minted(last)}, true},
	}
	const n = 100
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := resigned(t, 0, tc.signers...)
			in.Signers = nil // kept by a build before signers were
			rev := revocation(t, "org.example", []string{did(minted(last))}, a)
			run := func(bundles int) uint64 {
				st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
				for i := range trust.MaxMintedKeys {
					name := fmt.Sprintf("minted%04d", i)
					st.Keys[name] = trust.Key{Name: name, Key: pub(minted(i)), Scopes: []string{"org.example"}, AddedAt: "2026-11-01T00:00:00Z", Origin: did(a)}
				}
				delete(st.Installed, in.BundleID)
				for i := range bundles {
					st.Installed[fmt.Sprintf("org.example.line%03d", i)] = in
				}
				var res *trust.RevocationEffects
				var err error
				got := testalloc.Least(func() { _, res, err = trust.ApplyRevocation(st, rev, now) })
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]int{true: bundles}[tc.wantFailed]; len(res.FailedClosed) != want {
					t.Fatalf("%d of %d bundles failed closed; want %d", len(res.FailedClosed), bundles, want)
				}
				return got
			}
			one, two := run(n), run(2*n)
			per := int64(two-one) / n
			t.Logf("%d bytes per recounted bundle", per)
			if per > 160<<10 {
				t.Fatalf("one more recounted bundle allocated %d KB against %d trusted keys; want at most 160 KB: the recount copies every trusted key per bundle",
					per>>10, trust.MaxMintedKeys+1)
			}
		})
	}
}
