package agh

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRelayRewrittenProofKeyIsRefused: a relay rewrites the proof's key of
// a signed transfer into text of its choosing, hoping the receiver reports
// that text as the verification method that signed.
//
// Attack: the proof object is outside the signed bytes. A check of only
// amp.ValidDID(amp.BareDID(key)) never looks past the first '/' or '?',
// and DIDDocument.SigningKey, given a key without '#', returns the DID's
// first signing key whatever the path or query, so "did:key:A/<anything>"
// and "did:key:A?<anything>" verified as "did:key:A#A" does, and
// Transfer.KeyID carried the relay's text (control characters included).
//
// Should: invalid_proof unless key is a DID or a DID URL with only a
// fragment (amp.ValidDID(key), as a2acard's checkKid requires of a kid),
// so that KeyID is always an id the DID document names (or the bare DID).
func TestRelayRewrittenProofKeyIsRefused(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	did := amp.DIDKey(key.Public().(ed25519.PublicKey))
	proof := proofOf(t, env)
	for _, spelt := range []string{
		did + "/\x1b[2K\rvalid: signed by did:web:bank.example\n",
		did + "?service=https://evil.example/",
		did + "/path#" + strings.TrimPrefix(did, "did:key:"),
		did + "?q#" + strings.TrimPrefix(did, "did:key:"),
		proof["key"] + "\n",
	} {
		tr, err := ReceiveTransfer(withProof(t, env, proof["type"], spelt, proof["sig"]), recvOpts())
		if errName(err) != string(ErrInvalidProof) {
			kid := ""
			if tr != nil {
				kid = tr.KeyID
			}
			t.Errorf("proof key %q: want invalid_proof, got err=%v, accepted with KeyID %q", spelt, err, kid)
		}
	}
	// The genuine key, and the bare DID (which the DID's first signing key
	// answers for), still verify, and both are reported as the method the
	// DID document selected, not as spelt (a relay's rewrite changes
	// nothing reported).
	for _, spelt := range []string{proof["key"], did} {
		tr, err := ReceiveTransfer(withProof(t, env, proof["type"], spelt, proof["sig"]), recvOpts())
		if err != nil || !tr.Verified || tr.KeyID != proof["key"] {
			t.Errorf("proof key %q: want verified with that KeyID, got %+v %v", spelt, tr, err)
		}
	}
}

// TestSignerKeyIDWithPathOrQueryIsRefused: a signer configured with a key
// id the receiver refuses (a path or query, or no DID URL at all) would
// emit transfers no peer accepts; TransferEnvelope refuses it up front.
func TestSignerKeyIDWithPathOrQueryIsRefused(t *testing.T) {
	key := testKey(1)
	did := amp.DIDKey(key.Public().(ed25519.PublicKey))
	for _, kid := range []string{did + "/p", did + "?q=1", did + "#", did + "#a b", did + "#" + strings.Repeat("a", maxIDBytes)} {
		_, err := TransferEnvelope(pageCatalog()[0], &Signer{Key: key, KeyID: kid}, "", envOpts())
		if err == nil {
			t.Errorf("key id %q: a transfer was signed under it", kid)
		}
	}
}

// proofOf returns the members of env's proof.
func proofOf(t *testing.T, env []byte) map[string]string {
	t.Helper()
	var proof map[string]string
	if err := json.Unmarshal(members(t, env)["proof"], &proof); err != nil {
		t.Fatal(err)
	}
	return proof
}

// withProof returns env with its proof replaced, as a relay rewrites it
// without the key.
func withProof(t *testing.T, env []byte, typ, key, sig string) []byte {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"type": typ, "key": key, "sig": sig})
	return resign(t, env, map[string]string{"proof": string(raw)}, nil, "")
}
