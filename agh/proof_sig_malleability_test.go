package agh

import (
	"strings"
	"testing"
)

// TestProofSigHasOneEncoding: a relay without the key rewrites the text of
// a signed transfer's proof sig and hopes the proof still verifies.
//
// Attack: base64.RawURLEncoding.DecodeString is not Strict (the 4 unused
// bits of the 86th character are ignored, so 16 spellings decode to one
// signature) and skips CR and LF anywhere in the text (a JSON "\n" or "\r"
// escape inside sig). The proof covers the envelope without itself, so
// every such spelling would be a byte-different envelope accepted as
// Verified: a receiver that deduplicates or logs transfers by their bytes
// or digest sees distinct messages.
//
// Should: one encoding per signature: invalid_proof for any sig that is
// not canonical unpadded base64url of 64 bytes (alphabet checked, Strict
// decoding), as a2acard's decodeB64 requires of a JWS signature.
func TestProofSigHasOneEncoding(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	if tr, err := ReceiveTransfer(env, recvOpts()); err != nil || !tr.Verified {
		t.Fatalf("the genuine transfer: %+v %v", tr, err)
	}
	proof := proofOf(t, env)
	sig := proof["sig"]
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, sig[len(sig)-1])
	if len(sig) != 86 || last < 0 {
		t.Fatalf("unexpected sig form %q", sig)
	}
	for name, variant := range map[string]string{
		"non-zero trailing bits": sig[:85] + string(alphabet[last^1]),
		"embedded LF":            sig[:40] + "\n" + sig[40:],
		"embedded CRLF":          sig[:10] + "\r\n" + sig[10:],
		"trailing LF":            sig + "\n",
		"padded":                 sig + "==",
		"standard alphabet":      strings.NewReplacer("-", "+", "_", "/").Replace(sig),
		"truncated":              sig[:85],
	} {
		if variant == sig {
			continue // the signature has no '-' or '_' to respell
		}
		tr, err := ReceiveTransfer(withProof(t, env, proof["type"], proof["key"], variant), recvOpts())
		if errName(err) != string(ErrInvalidProof) {
			t.Errorf("%s: a rewritten proof sig was not invalid_proof: verified=%v err=%v", name, tr != nil && tr.Verified, err)
		}
	}
}
