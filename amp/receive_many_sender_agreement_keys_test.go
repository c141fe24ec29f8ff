package amp

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestEncryptedMessageFromASenderOfManyAgreementKeysIsTriedAgainstAFew
// covers the decryption attempts a sender's DID document decides
// (docs/SPEC-DECISIONS.md AMP-32).
//
// Attack: the publisher of a DID document lists many active X25519 keys
// in keyAgreement (up to 256, the methods ParseDIDDocument keeps). The
// encrypted part of a message names no sender key, so step 7 of Receive
// tried every one of them with every local key: an X25519 and a
// Poly1305 pass over the whole ciphertext each, before the signature
// (step 8) is checked. Anyone may then send a message claiming that
// DID, of junk ciphertext up to the 16 MiB message cap, and the agent
// authenticated that ciphertext 256 times per local key (64 times for
// the 64 keys below) where a sender of one key costs one pass.
//
// Should: the sender's first maxSenderAgreementKeys (4) eligible keys,
// smallest id first, are tried, with each local key, and no more: the
// forged message is 3001 decryption_failed after 4 attempts per local
// key (counted as shared keys computed). A sender encrypting with its
// first key (RFC 001 §8.9, what a sender selects) or, mid-rotation,
// with its second, is read; one encrypting with its fifth key is not.
func TestEncryptedMessageFromASenderOfManyAgreementKeysIsTriedAgainstAFew(t *testing.T) {
	f := newFixture(t)
	const did = "did:web:many.example"
	doc := &DIDDocument{ID: did,
		Methods:         []VerificationMethod{{ID: did + "#k", KeyType: KeyEd25519, PublicKey: f.webKey.Public().(ed25519.PublicKey)}},
		AssertionMethod: []string{did + "#k"}}
	keys := make([]*AgreementKey, 64)
	for i := range keys {
		k, err := NewAgreementKey([32]byte{7, byte(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
		id := fmt.Sprintf("%s#x%02d", did, i)
		doc.Methods = append(doc.Methods, VerificationMethod{ID: id, KeyType: KeyX25519, PublicKey: k.Public[:]})
		doc.KeyAgreement = append(doc.KeyAgreement, id)
	}
	f.resolver[did] = doc
	stranger, _ := NewAgreementKey([32]byte{99})
	other, _ := NewAgreementKey([32]byte{98})
	clock := func() time.Time { return f.now }
	forger := ed25519.NewKeyFromSeed(make([]byte, 32))
	seal := func(own *AgreementKey) []byte {
		signer := f.webKey
		if own == stranger {
			signer = forger // the signature is checked after the decryption
		}
		s, err := NewSender(SenderConfig{Identity: Identity{DID: did, SigningKey: signer, Agreement: own}, Rand: &seqReader{}, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		_, b, err := s.Seal(context.Background(), Draft{Type: TypeMessage, To: To(f.bob.DID), Body: []byte{0xf6}, Encrypt: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name   string
		own    *AgreementKey
		local  []*AgreementKey
		read   bool
		byKeys int // shared keys computed, at most
	}{
		{"a forged message, one local key", stranger, []*AgreementKey{f.bobX}, false, maxSenderAgreementKeys},
		{"a forged message, two local keys", stranger, []*AgreementKey{other, f.bobX}, false, 2 * maxSenderAgreementKeys},
		{"the sender's first key", keys[0], []*AgreementKey{f.bobX}, true, 1},
		{"the sender's second key", keys[1], []*AgreementKey{other, f.bobX}, true, maxSenderAgreementKeys + 2},
		{"the sender's fifth key", keys[4], []*AgreementKey{f.bobX}, false, maxSenderAgreementKeys},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache := NewSharedKeys(4096)
			r, err := NewReceiver(ReceiverConfig{Now: clock, DIDs: f.resolver, AgreementKeys: c.local, SharedKeys: cache})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Receive(context.Background(), seal(c.own))
			if c.read && err != nil {
				t.Fatalf("got %v, want the message read", err)
			}
			if !c.read && (!errors.Is(err, ErrName("decryption_failed")) || CodeOf(err) != CodeUnauthorized) {
				t.Fatalf("got %v, want 3001 decryption_failed", err)
			}
			if n := len(cache.keys.m); n > c.byKeys {
				t.Fatalf("%d shared keys computed, want at most %d", n, c.byKeys)
			}
		})
	}
}
