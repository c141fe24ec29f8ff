package a2acard

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testkeys"
)

// TestSmallOrderCallerKeyCannotVouchForACard: a caller verifies a card
// against a key it was handed (a did:key it read from a peer, a key file).
// Before, Verify checked only the key's length; for a key of small order
// crypto/ed25519.Verify accepts the forged signature R = identity, S = 0
// on a large share of all messages (all of them, for the identity), so
// anybody could present any card as signed by that key. Expected:
// invalid_public_key, whatever the card, before its signature is read.
func TestSmallOrderCallerKeyCannotVouchForACard(t *testing.T) {
	forged := make([]byte, ed25519.SignatureSize)
	forged[0] = 0x01 // R = the identity point, S = 0
	for name, k := range testkeys.SmallOrderEd25519(t) {
		t.Run(name, func(t *testing.T) {
			for _, kid := range []string{DIDKeyID(k), "did:web:agent.example#key-1"} {
				card := withSignature(t, signedVector(t), map[string]string{"alg": Alg, "kid": kid, "typ": Typ}, forged)
				v, err := Verify(card, k, kid)
				if err == nil {
					t.Fatalf("a card signed by no one verified under the small-order key (kid %s): %+v", kid, v.Name)
				}
				wantName(t, err, "invalid_public_key")
			}
		})
	}
}
