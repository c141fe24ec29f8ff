package trust

import (
	"crypto/ed25519"
	"testing"
)

// TestDIDOfReadsTheOneEntryThePolicyReads
//
// A store looking up the revocation of each key it trusts
// (resolver.loadRevokedKeys) encoded or read each key's did:key by a copy
// of State.didOf, the policy's: two readers of one entry that could come
// apart. DIDOf is now the one both call: it answers KeyDIDs' entry for a
// key when there is one (here a marker, to show which was read), and
// encodes the key otherwise.
func TestDIDOfReadsTheOneEntryThePolicyReads(t *testing.T) {
	pubKey, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Name: "k", Key: pubKey, Scopes: []string{"*"}}
	if got := (&State{}).DIDOf(k); got != k.DID() {
		t.Fatalf("DIDOf without KeyDIDs = %q, want %q", got, k.DID())
	}
	s := &State{KeyDIDs: map[string]string{string(pubKey): "did:key:marker"}}
	if got := s.DIDOf(k); got != "did:key:marker" {
		t.Fatalf("DIDOf = %q, want the KeyDIDs entry", got)
	}
}
