package amp

// Tests for RFC 001 requirements that docs/CONFORMANCE.md maps here, each
// named after its section.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"
)

// TestRFC001Section4_1MessageWithoutTTLOrBodyIsRefused: ttl and (for an
// unencrypted message) body are required fields; a message that lacks one
// is refused 1001 missing_field before its signature is looked at
// (threat: a message without ttl that never expires, or without body,
// accepted as if the sender had signed a default).
func TestRFC001Section4_1MessageWithoutTTLOrBodyIsRefused(t *testing.T) {
	f := newFixture(t)
	msg := f.seal(t, Draft{})
	if _, err := f.recv.Receive(context.Background(), msg); err != nil {
		t.Fatalf("the intact message is refused: %v", err)
	}
	for _, field := range []string{"ttl", "body"} {
		t.Run(field, func(t *testing.T) {
			cut := edit(t, msg, func(m map[string][]byte) { m[field] = nil })
			_, err := f.recv.Receive(context.Background(), cut)
			if !errors.Is(err, CodeInvalidMessage) || NameOf(err) != "missing_field" {
				t.Fatalf("a message without %s: got %v, want 1001 missing_field", field, err)
			}
		})
	}
}

// recordingReader hands out known bytes and records how many it gave.
type recordingReader struct {
	next byte
	read []byte
}

func (r *recordingReader) Read(p []byte) (int, error) {
	for i := range p {
		r.next += 0x11
		p[i] = r.next
	}
	r.read = append(r.read, p...)
	return len(p), nil
}

// failingReader is a CSPRNG that has failed.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy source failed") }

// TestRFC001Section4_2MessageIDRandomPartComesFromTheInjectedCSPRNG: the
// last 8 bytes of a message id are exactly the bytes drawn from the
// sender's injected CSPRNG (Appendix A.7 / B: "last 8 bytes MUST be CSPRNG
// output"), the first 8 are ts; a failing CSPRNG fails the send instead of
// falling back to something predictable, and two ids drawn from
// crypto/rand at the same millisecond differ (threat: guessable ids that
// let a third party pre-empt or collide with a sender's messages).
func TestRFC001Section4_2MessageIDRandomPartComesFromTheInjectedCSPRNG(t *testing.T) {
	f := newFixture(t)
	clock := func() time.Time { return f.now }
	rec := &recordingReader{}
	s, err := NewSender(SenderConfig{Identity: f.alice, Rand: rec, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := s.Seal(context.Background(), Draft{Type: TypeMessage, To: To(f.bob.DID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.read) != 8 || !bytes.Equal(m.ID[8:], rec.read) {
		t.Fatalf("id random part %x, the CSPRNG gave %x", m.ID[8:], rec.read)
	}
	if m.ID.Timestamp() != m.TS {
		t.Fatalf("id timestamp %d, ts %d", m.ID.Timestamp(), m.TS)
	}
	bad, err := NewSender(SenderConfig{Identity: f.alice, Rand: failingReader{}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bad.Seal(context.Background(), Draft{Type: TypeMessage, To: To(f.bob.DID)}); err == nil {
		t.Fatal("a message was sealed although the CSPRNG failed")
	}
	if _, err := NewSender(SenderConfig{Identity: f.alice, Now: clock}); err == nil {
		t.Fatal("a sender without a CSPRNG was accepted")
	}
	a, err := NewID(rand.Reader, m.TS)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewID(rand.Reader, m.TS)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two ids drawn from crypto/rand at the same millisecond are equal")
	}
}

// TestRFC001Section8_4MessageIDsAreUniquePerSender: one sender sealing many
// messages within the same millisecond never repeats an id, because the
// id's random half is fresh for each (threat: a legitimate message dropped
// by the recipient's replay check as a duplicate of an earlier one).
func TestRFC001Section8_4MessageIDsAreUniquePerSender(t *testing.T) {
	f := newFixture(t)
	s, err := NewSender(SenderConfig{Identity: f.alice, Rand: rand.Reader, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[ID]bool{}
	for i := 0; i < 2000; i++ {
		m, _, err := s.Seal(context.Background(), Draft{Type: TypeMessage, To: To(f.bob.DID)})
		if err != nil {
			t.Fatal(err)
		}
		if seen[m.ID] {
			t.Fatalf("message %d repeats id %s", i, m.ID)
		}
		seen[m.ID] = true
	}
}

// TestRFC001Section4_4DocRequestNamesDocIDOrHash: a DOC_REQUEST body that
// names neither doc_id nor hash is refused 1001 missing_field (threat: a
// request for "any document" that a lax server answers with whatever it
// has).
func TestRFC001Section4_4DocRequestNamesDocIDOrHash(t *testing.T) {
	for _, c := range []struct {
		name string
		body string // hex CBOR
		ok   bool
	}{
		{"empty map", "a0", false},
		{"accept only", "a1666163636570746b6170706c69636174696f6e", false},
		{"empty doc_id", "a166646f635f696460", false},
		{"empty hash", "a16468617368" + "40", false},
		{"doc_id", "a166646f635f6964617a", true},
		{"hash", "a16468617368" + "4401020304", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeDocRequest(hx(c.body))
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && (!errors.Is(err, CodeInvalidMessage) || NameOf(err) != "missing_field") {
				t.Fatalf("got %v, want 1001 missing_field", err)
			}
		})
	}
}

// extClaims is an ext map that claims everything a naive receiver might
// trust: {"from": <bob>, "ttl": 2^32, "verified": true, "authorized": true,
// "v": 2}.
func extClaims(f *fixture) []byte {
	return appendMap(nil, []field{
		{textKey("from"), appendText(nil, f.bob.DID)},
		{textKey("ttl"), u(1 << 32)},
		{textKey("verified"), []byte{0xf5}},
		{textKey("authorized"), []byte{0xf5}},
		{textKey("v"), u(2)},
	})
}

// TestRFC001Section8_7ExtIsUntrustedAndChangesNothing: ext is unsigned
// and never used for a security decision (§8.1, §8.7). A valid message
// whose ext claims another sender, a longer ttl, "verified", "authorized"
// and another version is received with its signed from, ttl and v, and
// the ext claims touch none of them; the same claims added to a message
// with a broken signature, an expired one or an unsupported v do not
// rescue it (threat: a forger or a relay writing into the unsigned part
// to pass as someone else, extend a message's life or skip verification).
func TestRFC001Section8_7ExtIsUntrustedAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	plain := f.seal(t, Draft{})
	claimed := edit(t, plain, func(m map[string][]byte) { m["ext"] = extClaims(f) })
	m, err := f.recv.Receive(ctx, claimed)
	if err != nil {
		t.Fatalf("a valid message with ext claims is refused: %v", err)
	}
	if m.From != f.alice.DID || m.TTL != uint64(DefaultTTL.Milliseconds()) || m.V != 1 {
		t.Fatalf("ext changed the signed fields: from %s ttl %d v %d", m.From, m.TTL, m.V)
	}
	sealed := f.seal(t, Draft{Ext: extClaims(f)})
	if m2, err := f.recv.Receive(ctx, sealed); err != nil || m2.From != f.alice.DID || m2.TTL != uint64(DefaultTTL.Milliseconds()) {
		t.Fatalf("a sender's own ext changed the signed fields: %v %v", m2, err)
	}
	for _, c := range []struct {
		name string
		edit func(map[string][]byte)
		code Code
	}{
		{"broken signature", flipSig, CodeInvalidSignature},
		{"expired", expired(f), CodeInvalidTimestamp},
		{"unsupported v", func(m map[string][]byte) { m["v"] = u(2) }, CodeUnsupportedVersion},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := edit(t, plain, func(m map[string][]byte) { c.edit(m); m["ext"] = extClaims(f) })
			if _, err := f.recv.Receive(ctx, bad); !errors.Is(err, c.code) {
				t.Fatalf("with ext claims: got %v, want %v", err, c.code)
			}
		})
	}
}

// TestRFC001Section13_1MessagesCarryTheMajorOfTheSelectedVersion: after a
// HELLO selects a version, every non-handshake message is sent with v =
// major(selected) while HELLO, HELLO_ACK and HELLO_REJECT keep v = 1
// (§13.1, §13.5); a receiver that supports only the selected major refuses
// a non-handshake message with another v (1004) and takes the handshake
// with v = 1 (threat: a peer that silently speaks a version the two sides
// did not agree on).
func TestRFC001Section13_1MessagesCarryTheMajorOfTheSelectedVersion(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	clock := func() time.Time { return f.now }
	for _, c := range []struct {
		offered []string
		major   uint64
	}{
		{[]string{"2.3", "1.0"}, 2},
		{[]string{"7", "2.0.1"}, 2},
		{[]string{"1.4.2"}, 1},
	} {
		selected, ok := SelectVersion(HelloBody{Versions: c.offered}, []uint64{1, 2})
		if !ok {
			t.Fatalf("%v: nothing selected", c.offered)
		}
		major, ok := MajorVersion(selected)
		if !ok || major != c.major {
			t.Fatalf("%v: selected %q, major %d, want %d", c.offered, selected, major, c.major)
		}
		s, err := NewSender(SenderConfig{Identity: f.alice, Rand: &seqReader{}, Now: clock, Version: major})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReceiver(ReceiverConfig{Now: clock, Versions: []uint64{major}})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []Type{TypeMessage, TypeCapInvoke, TypePing, TypeHello, TypeHelloAck, TypeHelloReject} {
			m, raw, err := s.Seal(ctx, Draft{Type: typ, To: To(f.bob.DID), Body: hx("a0")})
			if err != nil {
				t.Fatal(err)
			}
			want := major
			if typ.IsHandshake() {
				want = 1
			}
			if m.V != want {
				t.Fatalf("selected %q: %s sent with v = %d, want %d", selected, typ, m.V, want)
			}
			if !typ.IsHandshake() {
				if _, err := r.Receive(ctx, raw); errors.Is(err, CodeUnsupportedVersion) {
					t.Fatalf("selected %q: %s with v = major refused: %v", selected, typ, err)
				}
				other := edit(t, raw, func(m map[string][]byte) { m["v"] = u(major%2 + 1) })
				if _, err := r.Receive(ctx, other); !errors.Is(err, CodeUnsupportedVersion) {
					t.Fatalf("selected %q: %s with another v: got %v, want 1004", selected, typ, err)
				}
			}
		}
	}
}

// TestRFC001Section8_6EncryptedNullBodyIsSignedAndSealedAsF6: an
// encrypted message with no payload signs and encrypts CBOR null (0xF6):
// the recipient decrypts exactly h'f6', the signature verifies over it,
// and the same message with an empty plaintext sealed in its place is
// refused (threat: "no body" encoded two ways, one of them unsigned, so a
// sender's empty message and a forged one are told apart by nobody).
func TestRFC001Section8_6EncryptedNullBodyIsSignedAndSealedAsF6(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m, raw, err := f.sender.Seal(ctx, Draft{Type: TypeMessage, To: To(f.bob.DID), Encrypt: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Enc == nil {
		t.Fatal("the message is not encrypted")
	}
	got, err := f.recv.Receive(ctx, raw)
	if err != nil {
		t.Fatalf("the encrypted null body is refused: %v", err)
	}
	if !bytes.Equal(got.Body, []byte{0xf6}) {
		t.Fatalf("decrypted body %x, want f6", got.Body)
	}
	// Re-seal an empty plaintext with the same nonce and keys: the
	// signature (made over h'f6') must not verify it.
	pub := f.bobX.Public
	var nonce [NonceSize]byte
	copy(nonce[:], m.Enc.Nonce)
	empty := *m
	empty.Body = []byte{}
	if err := Encrypt(&empty, f.aliceX, &pub, &nonce, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.recv.Receive(ctx, empty.Encode()); err == nil {
		t.Fatal("an empty plaintext in place of h'f6' was accepted")
	}
}
