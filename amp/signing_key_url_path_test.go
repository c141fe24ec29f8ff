package amp

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"
)

// TestSigningKeyRefusesADIDURLWithAPathOrQuery: SigningKey compared only
// the DID part of its argument (BareDID) and, with no fragment, picked
// the DID's first signing key, so "did:key:A/anything" or
// "did:key:A?service=x" named the same key as "did:key:A": a caller that
// reports or keys on the id it passed (as agh's Transfer.KeyID did) took a
// relay's text for the key's name. Only a DID, or a DID URL with only a
// fragment, names a key; the rest is 3001 no_eligible_key.
func TestSigningKeyRefusesADIDURLWithAPathOrQuery(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey)
	did := DIDKey(pub)
	doc, err := DIDKeyDocument(did)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	for _, id := range []string{did, doc.Methods[0].ID} {
		if _, err := doc.SigningKey(id, now); err != nil {
			t.Errorf("%q: %v, want its key", id, err)
		}
	}
	for _, id := range []string{did + "/anything", did + "?service=x", did + "/p#" + doc.Methods[0].ID[len(did)+1:], did + "#"} {
		if _, err := doc.SigningKey(id, now); NameOf(err) != "no_eligible_key" {
			t.Errorf("%q: %v, want no_eligible_key", id, err)
		}
	}
}
