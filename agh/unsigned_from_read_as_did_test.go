package agh

import "testing"

// TestUnsignedFromThatReadsAsADIDIsRefused: AGH-12 refuses an
// unsigned envelope whose from "reads as a DID", but reads it as "did:" in
// ASCII after leading blanks only.
//
// Attack: a relay strips the proof of a transfer signed by did:key:S
// (or a forger writes one) and sets from to a spelling a caller's reader
// turns into "did:key:S": percent-encoded ("did%3Akey%3AS", which a
// caller that puts From into a URL path or query, or unescapes it before
// a lookup, decodes), fullwidth ("ｄｉｄ：key:S", the fullwidth colon
// alone, which NFKC, as PRECIS identifier comparison applies, maps to
// ASCII), a zero-width space inside "did" (dropped by a reader that strips
// format characters, and invisible on screen), a Cyrillic і (one glyph
// with i). Each is taken unverified, From credited to S by whoever
// normalizes or shows it.
//
// Before AGH-14: all accepted, Verified false.
//
// Should: missing_proof, as for "did:key:S": an unsigned from is a plain
// peer id (ASCII letters, digits and ". _ - @ / + ~", in which no ':' can
// be written), not anything a reader may take for a DID; the page's peer
// ids are still taken unverified.
func TestUnsignedFromThatReadsAsADIDIsRefused(t *testing.T) {
	key := testKey(1)
	did := keyID(key)[:len("did:key:")+48]
	rest := did[len("did:key:"):]
	o := recvOpts()
	o.AllowUnverified = true
	for _, from := range []string{
		"did%3Akey%3A" + rest,
		"%64id:key:" + rest,
		"\uff44\uff49\uff44\uff1akey:" + rest,
		"did\uff1akey:" + rest,
		"d\u200bid:key:" + rest,
		"d\u0456d:key:" + rest,
	} {
		env := resign(t, signed(t, key), map[string]string{"from": quote(from), "proof": "null"}, nil, "")
		if _, err := ReceiveTransfer(env, o); errName(err) != string(ErrMissingProof) {
			t.Errorf("unsigned from %+q: %v, want %s", from, err, ErrMissingProof)
		}
	}
	for _, from := range []string{"designer.session-19", "ops-coordinator.session-42", "alice@agents.example", "team/builder_2", "a+b~c"} {
		env := resign(t, signed(t, key), map[string]string{"from": quote(from), "proof": "null"}, nil, "")
		if tr, err := ReceiveTransfer(env, o); err != nil || tr.Verified || tr.From != from {
			t.Errorf("unsigned from %q: %v, want accepted unverified", from, err)
		}
	}
	for _, from := range []string{"did&#58;key&#58;" + rest, "did=3Akey=3A" + rest, "did\\u003akey" + rest, "x y", ""} {
		env := resign(t, signed(t, key), map[string]string{"from": quote(from), "proof": "null"}, nil, "")
		if _, err := ReceiveTransfer(env, o); err == nil {
			t.Errorf("unsigned from %+q: accepted, want refused", from)
		}
	}
}
