package resolver

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/trust"
)

// TestTrustListShowsAnOlderStoresSmallOrderKeyAsRefused
//
// Attack (a hidden key): a store written before TRUST-21 may trust a key
// of small order (for the identity point one forged signature verifies
// every manifest). The store now trusts it for nothing, but TrustList
// listed the policy's keys only, so `trust ls` showed the store without
// it: the operator could not see that the store holds a key an attacker
// chose, nor which name to `trust rm`.
//
// Defence (docs/SPEC-DECISIONS.md TRUST-21, amended): TrustList still
// lists only the keys that are trusted (its callers build policies from
// it), and TrustRefused lists the keys the records hold but trust for
// nothing, each with why ("small_order"); trust rm removes it.
func TestTrustListShowsAnOlderStoresSmallOrderKeyAsRefused(t *testing.T) {
	s := newStore(t)
	identity := make(ed25519.PublicKey, ed25519.PublicKeySize)
	identity[0] = 0x01
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bTrust).Put([]byte("old"), encode(trustRecord{Name: "old", Key: identity, Scopes: []string{"*"}, AddedAt: "2026-01-01T00:00:00Z"}))
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.TrustList()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == "old" || bytes.Equal(k.Key, identity) {
			t.Fatal("TrustList lists the small-order key as trusted")
		}
	}
	refused, err := s.TrustRefused()
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 1 || refused[0].Name != "old" || refused[0].Refused != trust.RefusedSmallOrder ||
		refused[0].Key != amp.DIDKey(identity) || len(refused[0].Scopes) != 1 || refused[0].Scopes[0] != "*" {
		t.Fatalf("TrustRefused = %+v, want the key old, refused small_order", refused)
	}
	if err := s.TrustRemove("old"); err != nil {
		t.Fatalf("trust rm of the refused key: %v", err)
	}
	if refused, err := s.TrustRefused(); err != nil || len(refused) != 0 {
		t.Fatalf("after trust rm: %+v, %v", refused, err)
	}
}
