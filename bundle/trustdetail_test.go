package bundle

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestUntrustedKeyIDNotEchoedUnlessDIDKey: an untrusted_key error names a
// signer only by a canonical Ed25519 did:key; any other kid the file
// carries (attacker-chosen bytes) is never echoed (threat: a crafted kid
// injecting text into logs or terminals).
func TestUntrustedKeyIDNotEchoedUnlessDIDKey(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	good := amp.DIDKey(pub)
	tests := []struct{ kid, want string }{
		{good, good},
		{good + "#x", ""},
		{"did:key:z6LSbysY2xFMRpGMhb7tFTLMpeuPRaqaWM1yECx2AtzE3KCc", ""}, // X25519
		{"\x1b[31mroot\x1b[0m", ""},
		{"did:web:example.org", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := safeKeyID(tt.kid); got != tt.want {
			t.Errorf("safeKeyID(%q) = %q, want %q", tt.kid, got, tt.want)
		}
		err := untrustedKeyError(&signedObject{signatures: []Signature{{KID: tt.kid}}})
		d := err.Details.(UntrustedKeyDetails)
		if d.Signers[0].Key != tt.want || tt.want == "" && tt.kid != "" && strings.Contains(err.Message, tt.kid) {
			t.Errorf("kid %q: %q %+v", tt.kid, err.Message, d)
		}
	}
}
