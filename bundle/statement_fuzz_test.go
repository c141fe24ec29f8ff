package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// FuzzStatements feeds arbitrary bytes to the revocation and trust
// statement parsers: no panic, every refusal is a named *amp.Error, and an
// accepted statement re-signs to a statement that parses the same.
func FuzzStatements(f *testing.F) {
	k := testKey(1)
	rev := &Revocation{Format: RevocationFormat, Scope: "org.example", CreatedAt: "2026-11-22T00:00:00Z",
		Keys: []string{amp.DIDKey(pub(testKey(2)))}, Bundles: []BundleVersion{{BundleID: "org.example.x", Version: 3}}}
	if data, err := SignRevocation(rev, []ed25519.PrivateKey{k}); err == nil {
		f.Add(data)
	}
	rot := &Rotation{Format: RotationFormat, Scope: "org.example", Sequence: 1, Prev: make([]byte, 32), CreatedAt: "2026-11-22T00:00:00Z",
		Threshold: 1, Add: []NamedKey{{Name: "b", Key: amp.DIDKey(pub(testKey(2)))}}}
	if data, err := SignRotation(rot, []ed25519.PrivateKey{k, testKey(3)}); err == nil {
		f.Add(data)
	}
	f.Add([]byte{0xd8, 0x62, 0x84})
	named := func(t *testing.T, err error) {
		var e *amp.Error
		if !errors.As(err, &e) || e.Name == "" {
			t.Fatalf("error without a name: %#v", err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, obj, err := ParseRevocation(data); err != nil {
			named(t, err)
		} else {
			again, err := SignRevocation(r, []ed25519.PrivateKey{k})
			if err != nil {
				t.Fatalf("an accepted revocation does not re-sign: %v", err)
			}
			r2, _, err := ParseRevocation(again)
			if err != nil || len(r2.Keys) != len(r.Keys) || len(r2.Bundles) != len(r.Bundles) || obj == nil {
				t.Fatalf("re-signed revocation differs: %v", err)
			}
		}
		if r, _, err := ParseRotation(data); err != nil {
			named(t, err)
		} else if again, err := SignRotation(r, []ed25519.PrivateKey{k}); err != nil {
			t.Fatalf("an accepted trust statement does not re-sign: %v", err)
		} else if r2, _, err := ParseRotation(again); err != nil || !bytes.Equal(r2.Prev, r.Prev) || r2.Sequence != r.Sequence {
			t.Fatalf("re-signed trust statement differs: %v", err)
		}
	})
}
