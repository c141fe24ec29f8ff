package trust_test

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
)

// numberedKey is a key of its own for each i and tag.
func numberedKey(i int, tag byte) ed25519.PrivateKey {
	var seed [32]byte
	binary.BigEndian.PutUint32(seed[:], uint32(i+1))
	seed[31] = tag
	return ed25519.NewKeyFromSeed(seed[:])
}

// TestManyNamedKeysAgainstManyTrustedKeysAreNotSortedPerKey: trust
// statements add keys to a store without a bound of their own
// (bundle.MaxRotationKeys a statement, a share of statements an
// authority), and a revocation names up to bundle.MaxRevocationEntries
// keys, a policy file up to 1000 (docs/SPEC-DECISIONS.md TRUST-24). Each
// named key was looked up by sorting every trusted key anew: with 64,001
// keys trusted, one revocation of 1,000 keys held the store's write lock
// for 42 s on a 2-core machine. What an act costs now grows with the
// keys trusted plus the keys it names, not with their product: with 5,000
// trusted keys a revocation allocated 710 MB and a policy file 839 MB
// before, each well under 64 MB now.
func TestManyNamedKeysAgainstManyTrustedKeysAreNotSortedPerKey(t *testing.T) {
	const trusted, named = 5000, 1000
	const limit = 64 << 20
	a := seedKey(41)
	st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
	for i := range trusted {
		n := fmt.Sprintf("minted%05d", i)
		st.Keys[n] = trust.Key{Name: n, Key: pub(numberedKey(i, 7)), Scopes: []string{"org.example.minted"}, AddedAt: "2026-11-01T00:00:00Z"}
	}
	var dids []string
	file := &trust.PolicyFile{}
	for i := range named {
		k := did(numberedKey(i, 9))
		dids = append(dids, k)
		file.Keys = append(file.Keys, trust.PolicyKey{Name: fmt.Sprintf("listed%04d", i), Key: k, Scopes: []string{"net.other"}})
	}
	revocation := revocation(t, "org.example", dids, a)
	for _, tc := range []struct {
		name  string
		apply func() error
	}{
		{"a revocation naming 1,000 keys nobody trusts", func() error {
			_, res, err := trust.ApplyRevocation(st, revocation, now)
			if err == nil && len(res.RevokedKeys) != named {
				t.Errorf("revoked %d keys, want %d", len(res.RevokedKeys), named)
			}
			return err
		}},
		{"a policy file listing 1,000 new keys", func() error {
			_, res, err := trust.ApplyPolicy(st, file, now)
			if err == nil && len(res.Added) != named {
				t.Errorf("added %d keys, want %d", len(res.Added), named)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each run applies to st and returns another state: st
			// is cloned, never changed, so every run is the same.
			var err error
			got := testalloc.Least(func() { err = tc.apply() })
			if err != nil {
				t.Fatal(err)
			}
			if got > limit {
				t.Fatalf("allocated %d MB against %d trusted keys; want at most %d MB", got>>20, trusted, limit>>20)
			}
		})
	}
}
