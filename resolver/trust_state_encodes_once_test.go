package resolver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/trust"
	bolt "go.etcd.io/bbolt"
)

// TestLoadingTheTrustStateDoesNotEncodeEachKeysDIDThrice: an authority's
// statements may keep 1,000 keys of its account trusted (TRUST-25), and
// every trust change, judgement and listing loads the trust state and
// builds its policy. loadState encoded each trusted key's did:key once to
// look up its origin and once more to look up its revocation, and
// State.Policy a third time to look its revocation up again
// (docs/SPEC-DECISIONS.md TRUST-28). The allocations one more trusted key
// adds to a load and its policy are counted (the difference between
// stores of n and 2n extra keys, half of them revoked for a scope), not
// the time: at most 32; before, about 38, now about 28 (a did:key
// encoding is about 5). The
// state is checked too: every key is loaded, with its origin and its
// revocation, and the policy excepts the revoked keys there.
func TestLoadingTheTrustStateDoesNotEncodeEachKeysDIDThrice(t *testing.T) {
	const n = 200
	measure := func(keys int) float64 {
		s := newStore(t)
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i := range keys {
				name, did := fmt.Sprintf("minted%04d", i), amp.DIDKey(pub(mintedKey(i)))
				rec := trustRecord{Name: name, Key: pub(mintedKey(i)), Scopes: []string{"org.example"}, AddedAt: "2026-11-01T00:00:00Z"}
				if err := bucket(tx, bTrust).Put([]byte(name), encode(rec)); err != nil {
					return err
				}
				if err := bucket(tx, bMeta).Put(keyOriginKey(did), []byte("did:key:origin")); err != nil {
					return err
				}
				if i%2 == 0 {
					if err := bucket(tx, bRevoked).Put(revokedKeyKey(did), encode(revokedRecord{At: "2026-11-02T00:00:00Z", Scopes: []string{"org.example.sub"}})); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var st *trust.State
		var p int
		load := func() {
			err := s.db.View(func(tx *bolt.Tx) error {
				var err error
				st, err = s.loadState(tx, selection{})
				p = len(st.Policy().Keys)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(5, load)
		if len(st.Keys) != keys+2 || p != keys+2 { // newStore trusts two
			t.Fatalf("loaded %d keys, policy of %d; want %d", len(st.Keys), p, keys+2)
		}
		for i := range keys {
			k, did := st.Keys[fmt.Sprintf("minted%04d", i)], amp.DIDKey(pub(mintedKey(i)))
			if k.Origin != "did:key:origin" || k.DID() != did {
				t.Fatalf("key %d loaded as %+v; want its origin and did:key %s", i, k, did)
			}
			if _, revoked := st.RevokedKeys[did]; revoked != (i%2 == 0) {
				t.Fatalf("key %d: revocation loaded %v; want %v", i, revoked, i%2 == 0)
			}
		}
		for _, k := range st.Policy().Keys {
			if !strings.HasPrefix(k.Name, "minted") {
				continue
			}
			if want := map[bool]int{true: 1}[k.Name[len(k.Name)-1]%2 == 0]; len(k.Except) != want {
				t.Fatalf("policy key %s excepts %v; want %d scope(s)", k.Name, k.Except, want)
			}
		}
		return allocs
	}
	one, two := measure(n), measure(2*n)
	per := (two - one) / n
	t.Logf("%.1f allocations per trusted key", per)
	if per > 32 {
		t.Fatalf("one more trusted key costs %.1f allocations to load the trust state and build its policy; want at most 32: its did:key is encoded more than once", per)
	}
}
