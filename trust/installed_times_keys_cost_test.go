package trust_test

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
)

// resigned is the translate sample signed by keys (recorded as the
// signers that counted at import), with n capabilities of its one
// namespace when n > 0 (bundle.MaxCapabilities is the most a bundle
// holds).
func resigned(t testing.TB, n int, keys ...ed25519.PrivateKey) trust.Installed {
	t.Helper()
	in := translate(t)
	_, m, ok := in.Manifest()
	if !ok {
		t.Fatal("the translate sample does not decode")
	}
	if n > 0 {
		base := m.Capabilities[0]
		m.Capabilities, m.Aliases = nil, nil
		for i := range n {
			d := base
			d.Name = fmt.Sprintf("org.example.translate.n%05d.text", i) // a namespace of its own
			m.Capabilities = append(m.Capabilities, d)
		}
	}
	payload, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := bundle.SignObject(bundle.MediaTypeManifest, payload, keys)
	if err != nil {
		t.Fatal(err)
	}
	out := trust.Installed{BundleID: m.BundleID, Version: m.Version, Signed: signed}
	for _, k := range keys {
		out.Signers = append(out.Signers, did(k))
	}
	return out
}

// TestAnAuthoritysMintedKeysDoNotMakeEveryTrustChangeCostInstalledTimesKeys:
// one publisher key trusted for org.example may have trust statements
// keep trust.MaxMintedKeys keys of its account trusted (TRUST-25), and
// its bundles installed. Every change of the keys, thresholds or revoked
// keys, by anyone (here the operator raising the threshold of another
// tenant's scope), pins the floors it would lower (pinFloors, TRUST-12),
// and a revocation recounts each bundle its keys signed: both encoded
// every trusted key's did:key again for each installed bundle, and asked
// each key whether it covers the bundle by parsing every capability name
// of the manifest anew (bundle.Manifest.Namespaces), so that one act
// cost installed bundles × keys × capabilities (docs/SPEC-DECISIONS.md
// TRUST-26). The did:keys are now encoded once per act and a manifest's
// names read once per bundle. The bytes allocated are measured, not the
// time: before, 401 MB and 478 MB for the 200 bundles, 6,002 MB and
// 1,585 MB for the bundle of 10,000 namespaces.
func TestAnAuthoritysMintedKeysDoNotMakeEveryTrustChangeCostInstalledTimesKeys(t *testing.T) {
	a := seedKey(41)
	minted := func(st *trust.State) {
		for i := range trust.MaxMintedKeys {
			n := fmt.Sprintf("minted%04d", i)
			st.Keys[n] = trust.Key{Name: n, Key: pub(numberedKey(i, 7)), Scopes: []string{"org.example"}, AddedAt: "2026-11-01T00:00:00Z", Origin: did(a)}
		}
		st.TimeFloor = 1_800_000_000 // a signed time was seen: pins are judged
	}
	manyBundles := func(t *testing.T) *trust.State {
		st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
		minted(st)
		in := resigned(t, 0, a, numberedKey(0, 7))
		st.Installed[in.BundleID] = in
		for i := range 199 {
			st.Installed[fmt.Sprintf("org.example.line%03d", i)] = in
		}
		return st
	}
	oneLargeBundle := func(t *testing.T) *trust.State {
		st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
		minted(st)
		st.Installed["org.example.translate"] = resigned(t, bundle.MaxCapabilities, a)
		return st
	}
	for _, tc := range []struct {
		name  string
		state func(t *testing.T) *trust.State
		act   func(t *testing.T, st *trust.State) error
		limit uint64 // bytes allocated
	}{
		{"200 bundles: the operator sets another scope's threshold", manyBundles, func(t *testing.T, st *trust.State) error {
			_, _, err := trust.SetThreshold(st, "com.other", 2)
			return err
		}, 128 << 20},
		{"200 bundles: the authority revokes a key that co-signed each", manyBundles, func(t *testing.T, st *trust.State) error {
			_, res, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(numberedKey(0, 7))}, a), now)
			if err == nil && len(res.FailedClosed) != 0 {
				t.Errorf("failed closed %v; a, which signed each too, still vouches for them", res.FailedClosed)
			}
			return err
		}, 128 << 20},
		{"a bundle of 10,000 capabilities: the operator sets another scope's threshold", oneLargeBundle, func(t *testing.T, st *trust.State) error {
			_, _, err := trust.SetThreshold(st, "com.other", 2)
			return err
		}, 256 << 20},
		{"a bundle of 10,000 capabilities: its floor", oneLargeBundle, func(t *testing.T, st *trust.State) error {
			trust.InstalledFloor(st, "org.example.translate")
			return nil
		}, 256 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.state(t)
			var err error
			got := testalloc.Least(func() { err = tc.act(t, st) })
			if err != nil {
				t.Fatal(err)
			}
			if got > tc.limit {
				t.Fatalf("allocated %d MB with %d keys trusted; want at most %d MB", got>>20, len(st.Keys), tc.limit>>20)
			}
		})
	}
}
