package a2acard

import (
	"bytes"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// FuzzVerify: no input panics; an accepted card names the expected kid,
// has a name and skills, and its signed payload is a canonical form,
// stable under a second Verify.
func FuzzVerify(f *testing.F) {
	card := signedVector(f)
	f.Add(card)
	f.Add(bytes.Replace(card, []byte(`"ampagent"`), []byte(`"ampagent2"`), 1))
	f.Add([]byte(`{"signatures":[{"protected":"e30","signature":""}]}`))
	f.Add([]byte(`{"name":1.0,"signatures":[]}`))
	pub := vectorPub()
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Verify(data, pub, "")
		if err != nil {
			return
		}
		again, err := Verify(data, pub, "")
		if err != nil || !bytes.Equal(again.Payload, v.Payload) {
			t.Fatalf("verify is not stable: %v", err)
		}
		if canon, err := jcs.Canonical(v.Payload); err != nil || !bytes.Equal(canon, v.Payload) {
			t.Fatalf("the signed payload is not canonical: %v", err)
		}
		if len(v.Skills) == 0 || v.Name == "" || v.KeyID != DIDKeyID(pub) {
			t.Fatalf("accepted a card without a name or skills, or under another kid")
		}
	})
}
