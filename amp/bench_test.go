package amp

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// A ~300-byte body: a CAP_INVOKE-like map.
func benchBody(b testing.TB) []byte {
	return mustMarshal(b, map[string]any{
		"id":         "org.example.translate:2.1.0",
		"timeout_ms": 5000,
		"params": map[string]any{
			"text":   strings.Repeat("lorem ipsum dolor sit amet ", 8),
			"source": "en", "target": "de", "formality": "default",
		},
	})
}

// Raw primitives, measured in the same run as the message benchmarks so the
// ratios in docs/PERFORMANCE.md compare like with like.

func BenchmarkPrimitiveEd25519Sign(b *testing.B) {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := make([]byte, 420) // the size of a Sig_Input around a 300-byte body
	b.ReportAllocs()
	for b.Loop() {
		ed25519.Sign(key, msg)
	}
}

func BenchmarkPrimitiveEd25519Verify(b *testing.B) {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := make([]byte, 420)
	sig := ed25519.Sign(key, msg)
	pub := key.Public().(ed25519.PublicKey)
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("verify")
		}
	}
}

// BenchmarkMessageBuildSign: id, canonical body, Sig_Input, Ed25519, encode.
func BenchmarkMessageBuildSign(b *testing.B) {
	f := newFixture(b)
	body := benchBody(b)
	d := Draft{Type: TypeCapInvoke, To: To(f.bob.DID), Body: body}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := f.sender.Seal(context.Background(), d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessageDecodeVerify: strict decode, envelope checks, did:key
// expansion, canonical body, Ed25519 verify.
func BenchmarkMessageDecodeVerify(b *testing.B) {
	f := newFixture(b)
	body := benchBody(b)
	msg := f.seal(b, Draft{Type: TypeCapInvoke, Body: body})
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := f.recv.Receive(context.Background(), msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessageDecodeOnly: the cheap checks before the signature (what a
// forged message costs up to step 5).
func BenchmarkMessageDecodeOnly(b *testing.B) {
	f := newFixture(b)
	msg := f.seal(b, Draft{Type: TypeCapInvoke, Body: benchBody(b)})
	b.ReportAllocs()
	for b.Loop() {
		raw, err := decodeEnvelope(msg, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := requiredFields(&raw); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncrypted(b *testing.B, cache *SharedKeys) {
	f := newFixture(b)
	body := benchBody(b)
	s, err := NewSender(SenderConfig{Identity: f.alice, Rand: &seqReader{}, Now: func() time.Time { return f.now }, SharedKeys: cache})
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewReceiver(ReceiverConfig{Now: func() time.Time { return f.now }, AgreementKeys: []*AgreementKey{f.bobX}, SharedKeys: cache})
	if err != nil {
		b.Fatal(err)
	}
	d := Draft{Type: TypeCapInvoke, To: To(f.bob.DID), Body: body, Encrypt: true, RecipientKey: &f.bobX.Public}
	b.ReportAllocs()
	for b.Loop() {
		_, msg, err := s.Seal(context.Background(), d)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Receive(context.Background(), msg); err != nil {
			b.Fatal(err)
		}
	}
}

// Seal+Receive of an encrypted message, shared keys cached per peer pair
// (compare with BenchmarkMessageSignedRoundTrip for the cost authcrypt adds).
func BenchmarkMessageEncryptedRoundTripCached(b *testing.B) { benchEncrypted(b, NewSharedKeys(0)) }

// The same without the cache: two X25519 operations per message.
func BenchmarkMessageEncryptedRoundTripUncached(b *testing.B) { benchEncrypted(b, nil) }

// Seal+Receive of the same message in plaintext.
func BenchmarkMessageSignedRoundTrip(b *testing.B) {
	f := newFixture(b)
	d := Draft{Type: TypeCapInvoke, To: To(f.bob.DID), Body: benchBody(b)}
	b.ReportAllocs()
	for b.Loop() {
		_, msg, err := f.sender.Seal(context.Background(), d)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.recv.Receive(context.Background(), msg); err != nil {
			b.Fatal(err)
		}
	}
}
