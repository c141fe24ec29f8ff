package trust_test

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
)

// TestARecountOfRecordsWithoutSignersDoesNotEncodeEveryKeyPerSignature:
// a store written by an older build keeps no signers in its installed
// records (trust.Installed.Signers), so a revocation recounts each
// bundle a revoked key signed against every trusted key
// (remainingSigners). The authority of org.example keeps 1,000 keys of
// its account trusted (TRUST-25), co-signs its 200 installed bundles
// with seven of them, and revokes one. Each signature's kid was looked
// up by encoding every trusted key's did:key (bundle.Policy.find): 8,000
// encodings per bundle, the signers being last in the policy's order
// (docs/SPEC-DECISIONS.md SCALE-25). The bytes allocated are measured,
// not the time: at most 192 MB; before, 512 MB (about 92 MB now, most of
// it remainingSigners' copy of the policy per bundle). Nothing fails
// closed: the authority's own key still vouches.
func TestARecountOfRecordsWithoutSignersDoesNotEncodeEveryKeyPerSignature(t *testing.T) {
	a := seedKey(43)
	st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
	for i := range trust.MaxMintedKeys {
		n := fmt.Sprintf("minted%04d", i)
		st.Keys[n] = trust.Key{Name: n, Key: pub(numberedKey(i, 9)), Scopes: []string{"org.example"}, AddedAt: "2026-11-01T00:00:00Z", Origin: did(a)}
	}
	signers := []ed25519.PrivateKey{a}
	for i := range bundle.MaxSignatures - 1 {
		signers = append(signers, numberedKey(trust.MaxMintedKeys-1-i, 9)) // the last in the policy's order
	}
	in := resigned(t, 0, signers...)
	in.Signers = nil // kept by a build before signers were
	delete(st.Installed, in.BundleID)
	for i := range 200 {
		st.Installed[fmt.Sprintf("org.example.line%03d", i)] = in
	}
	var res *trust.RevocationEffects
	var err error
	got := testalloc.Least(func() {
		_, res, err = trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(numberedKey(trust.MaxMintedKeys-1, 9))}, a), now)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FailedClosed) != 0 {
		t.Errorf("failed closed %v; a, which signed each, still vouches for them", res.FailedClosed)
	}
	t.Logf("allocated %d MB", got>>20)
	if got > 192<<20 {
		t.Fatalf("the recount of 200 bundles of %d signatures against %d keys allocated %d MB; want at most 192 MB: every key's did:key is encoded per signature",
			bundle.MaxSignatures, len(st.Keys), got>>20)
	}
}
