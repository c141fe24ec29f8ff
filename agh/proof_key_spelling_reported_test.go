package agh

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRelayTogglesProofKeyBetweenDIDAndMethodID: a relay without
// the key rewrites the proof's key from the method id the sender wrote
// ("did:key:A#A") to the bare DID ("did:key:A"), or back.
//
// Attack: the proof object is outside the signed bytes (AGH-3) and
// checkProof now accepts a DID or a fragment-only DID URL (AGH-9). A bare
// DID stands for the DID's first signing key (DIDDocument.SigningKey), so
// for every did:key sender, and every DID whose document's first signing
// key signed, both spellings verify the same signature. Today each is a
// byte-different envelope that verifies, and Transfer.KeyID, "the
// verification method that signed it", is reported as whatever text the
// relay chose: AGH-9's own rule ("whatever it can rewrite without breaking
// the proof must change nothing a receiver reports or keys on") is broken
// for the one rewrite it left open.
//
// Should: the receiver reports the verification method the DID document
// selected (vm.ID from SigningKey), so both spellings report "did:key:A#A";
// better still, the proof's key is covered by the signature (or only the
// spelling the sender wrote can verify), so the rewrite breaks the proof.
func TestRelayTogglesProofKeyBetweenDIDAndMethodID(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	did := amp.DIDKey(key.Public().(ed25519.PublicKey))
	proof := proofOf(t, env)
	if proof["key"] == did {
		t.Fatalf("the default signer wrote the bare DID %q; the test expects its method id", did)
	}
	rewritten := withProof(t, env, proof["type"], did, proof["sig"])
	if bytes.Equal(rewritten, env) {
		t.Fatal("the rewrite changed no byte")
	}
	orig, err := ReceiveTransfer(env, recvOpts())
	if err != nil || !orig.Verified {
		t.Fatalf("the sender's own envelope: %+v %v", orig, err)
	}
	tr, err := ReceiveTransfer(rewritten, recvOpts())
	if err != nil {
		return // the rewrite broke the proof: fixed
	}
	if tr.KeyID != orig.KeyID {
		t.Errorf("a relay rewrote the proof key %q to %q without the key: the envelope still verifies and KeyID is reported as %q, not %q",
			proof["key"], did, tr.KeyID, orig.KeyID)
	}
}
