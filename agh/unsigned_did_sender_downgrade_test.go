package agh

import (
	"testing"
)

// TestStrippedProofCannotRetargetADIDSendersTransfer: under
// AllowUnverified, to, channel and from are nobody's word.
//
// Attack: a transfer signed by did:key:S and addressed to peer A is seen
// by a relay, which sets proof to null and rewrites to (or channel) to
// name peer B. B accepts unverified envelopes for the seed's peers, so it
// takes a capability "from did:key:S" addressed to it: the AGH-3 check of
// to, and the proof that made it mean something, are gone, and a caller
// that keys on From (or logs it) credits S.
//
// Before AGH-12: accepted, Verified false, From did:key:S, To B.
//
// Should: a from that is a DID names a key its holder signs with, so an
// unsigned envelope claiming one is a stripped proof or a forgery:
// missing_proof even under AllowUnverified. The seed's peers (peer ids
// such as "designer.session-19") are still taken unverified.
func TestStrippedProofCannotRetargetADIDSendersTransfer(t *testing.T) {
	key := testKey(1)
	toA := resign(t, signed(t, key), map[string]string{"to": `"designer.session-19"`}, key, keyID(key))
	stripped := resign(t, toA, map[string]string{"to": `"ops-coordinator.session-42"`, "proof": `null`}, nil, "")
	o := recvOpts()
	o.AllowUnverified = true
	o.Self = []string{"ops-coordinator.session-42"}
	tr, err := ReceiveTransfer(stripped, o)
	if errName(err) != string(ErrMissingProof) {
		t.Fatalf("a DID sender's transfer, proof stripped and to rewritten: %v (transfer %+v), want %s", err, tr, ErrMissingProof)
	}
	for _, from := range []string{"DID:key:z6Mk", " did:key:z6Mk", "\tdid:web:agent.example", "\ufeffdid:key:z6Mk", "\u200bdid:key:z6Mk"} {
		spoof := resign(t, stripped, map[string]string{"from": quote(from)}, nil, "")
		if _, err := ReceiveTransfer(spoof, o); errName(err) != string(ErrMissingProof) {
			t.Errorf("unsigned from %q: %v, want %s", from, err, ErrMissingProof)
		}
	}
	seed := resign(t, stripped, map[string]string{"from": `"designer.session-19"`}, nil, "")
	if tr, err := ReceiveTransfer(seed, o); err != nil || tr.Verified {
		t.Fatalf("a seed peer's unsigned transfer: %v (transfer %+v), want accepted unverified", err, tr)
	}
}
