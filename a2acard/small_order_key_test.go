package a2acard

import (
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// smallOrderKeys reads keyfile/testdata/small-order-ed25519.txt: the 14
// encodings of the Ed25519 points of order dividing 8 and a non-canonical
// one, keys no one holds (docs/SPEC-DECISIONS.md AMP-14), by name. Each is
// checked to be one amp.CheckEd25519PublicKey refuses.
func smallOrderKeys(t testing.TB) map[string]ed25519.PublicKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "keyfile", "testdata", "small-order-ed25519.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ed25519.PublicKey{}
	for _, line := range strings.Split(string(data), "\n") {
		h, name, _ := strings.Cut(line, " ")
		if line == "" || line[0] == '#' {
			continue
		}
		k, err := hex.DecodeString(h)
		if err != nil || len(k) != ed25519.PublicKeySize || amp.CheckEd25519PublicKey(k) == nil {
			t.Fatalf("%s: not a 32-byte key amp.CheckEd25519PublicKey refuses", name)
		}
		out[name] = k
	}
	if len(out) != 15 {
		t.Fatalf("%d keys, want 15", len(out))
	}
	return out
}

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
	for name, k := range smallOrderKeys(t) {
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
