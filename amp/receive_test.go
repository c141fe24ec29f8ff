package amp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"
)

// fixture is a did:key sender and recipient with a fixed clock.
type fixture struct {
	alice, bob       Identity
	aliceX, bobX     *AgreementKey
	now              time.Time
	sender           *Sender
	recv             *Receiver
	resolver         mapResolver
	webDID           string
	webKey           ed25519.PrivateKey
	webSenderNoAgree *Sender
}

// seqReader is a deterministic "CSPRNG" for tests: 0x01, 0x02, ...
type seqReader struct{ n byte }

func (r *seqReader) Read(p []byte) (int, error) {
	for i := range p {
		r.n++
		p[i] = r.n
	}
	return len(p), nil
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{now: time.UnixMilli(1_800_000_000_000), resolver: mapResolver{}}
	mk := func(seed byte) (Identity, *AgreementKey) {
		priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
		x, err := AgreementKeyFromEd25519(priv)
		if err != nil {
			t.Fatal(err)
		}
		return Identity{DID: DIDKey(priv.Public().(ed25519.PublicKey)), SigningKey: priv, Agreement: x}, x
	}
	f.alice, f.aliceX = mk(1)
	f.bob, f.bobX = mk(2)
	clock := func() time.Time { return f.now }
	var err error
	f.sender, err = NewSender(SenderConfig{Identity: f.alice, Rand: &seqReader{}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	// A did:web sender whose document has a signing key but no key
	// agreement key.
	f.webKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	f.webDID = "did:web:signer.example"
	f.resolver[f.webDID] = &DIDDocument{ID: f.webDID,
		Methods:         []VerificationMethod{{ID: f.webDID + "#k", KeyType: KeyEd25519, PublicKey: f.webKey.Public().(ed25519.PublicKey)}},
		AssertionMethod: []string{f.webDID + "#k"}}
	f.webSenderNoAgree, err = NewSender(SenderConfig{Identity: Identity{DID: f.webDID, SigningKey: f.webKey, Agreement: f.aliceX}, Rand: &seqReader{}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	f.recv, err = NewReceiver(ReceiverConfig{Now: clock, DIDs: f.resolver, AgreementKeys: []*AgreementKey{f.bobX}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) seal(t testing.TB, d Draft) []byte {
	t.Helper()
	if d.To.DIDs == nil {
		d.To = To(f.bob.DID)
	}
	if d.Type == 0 {
		d.Type = TypeMessage
	}
	_, b, err := f.sender.Seal(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit decodes an encoded message into its fields, lets fn change them
// (raw CBOR values; nil deletes) and re-encodes.
func edit(t testing.TB, msg []byte, fn func(map[string][]byte)) []byte {
	t.Helper()
	keys, vals, err := mapEntries(msg, "message")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for i, k := range keys {
		m[k] = vals[i]
	}
	fn(m)
	var fs []field
	for k, v := range m {
		if v != nil {
			fs = append(fs, field{textKey(k), v})
		}
	}
	return appendMap(nil, fs)
}

func u(v uint64) []byte { return appendUint(nil, v) }

func flipSig(m map[string][]byte) {
	s := append([]byte{}, m["sig"]...)
	s[len(s)-1] ^= 1
	m["sig"] = s
}

func expired(f *fixture) func(map[string][]byte) {
	return func(m map[string][]byte) {
		ts := uint64(f.now.UnixMilli()) - 10*86400000
		id, _ := NewID(&seqReader{}, ts)
		m["ts"], m["id"], m["ttl"] = u(ts), appendBytes(nil, id[:]), u(1000)
	}
}

// TestReceiveValidationOrder pins the order of Receive's steps: each case
// breaks step k and as many later steps as it can, and must get step k's
// code and name. Moving a step changes the outcome of at least one case.
func TestReceiveValidationOrder(t *testing.T) {
	f := newFixture(t)
	plain := f.seal(t, Draft{Body: hx("a1616101")})
	enc := f.seal(t, Draft{Body: hx("a1616101"), Encrypt: true})
	_, webEnc, err := f.webSenderNoAgree.Seal(context.Background(), Draft{Type: TypeMessage, To: To(f.bob.DID), Encrypt: true, Body: hx("01")})
	if err != nil {
		t.Fatal(err)
	}
	allLater := func(m map[string][]byte) { // breaks steps 2..8 at once
		m["v"] = u(2)
		m["typ"] = u(0x99)
		delete(m, "to")
		expired(f)(m)
		m["from"] = appendText(nil, "did:web:nobody.example")
		flipSig(m)
	}
	tests := []struct {
		step int
		name string
		msg  []byte
		code Code
		err  ErrName
	}{
		{1, "shape: id of the wrong type", edit(t, plain, func(m map[string][]byte) { allLater(m); m["id"] = appendText(nil, "x") }), CodeInvalidMessage, "wrong_shape"},
		{1, "shape: thread_id over 256 bytes", edit(t, plain, func(m map[string][]byte) { allLater(m); m["thread_id"] = appendBytes(nil, make([]byte, MaxRefBytes+1)) }), CodeInvalidMessage, "wrong_shape"},
		{1, "shape: reply_to over 256 bytes", edit(t, plain, func(m map[string][]byte) { allLater(m); m["reply_to"] = appendBytes(nil, make([]byte, MaxRefBytes+1)) }), CodeInvalidMessage, "wrong_shape"},
		{1, "shape: unknown envelope field", edit(t, plain, func(m map[string][]byte) { allLater(m); m["extra"] = u(1) }), CodeInvalidMessage, "unknown_field"},
		{1, "shape: not a map", hx("8101"), CodeInvalidMessage, "wrong_shape"},
		{1, "shape: malformed cbor", append(edit(t, plain, allLater), 0x00), CodeInvalidMessage, "invalid_message"},
		{2, "version", edit(t, plain, allLater), CodeUnsupportedVersion, "unsupported_version"},
		{3, "type", edit(t, plain, func(m map[string][]byte) { allLater(m); m["v"] = u(1) }), CodeUnknownType, "unknown_type"},
		{4, "required field missing", edit(t, plain, func(m map[string][]byte) { allLater(m); m["v"] = u(1); m["typ"] = u(0x10) }), CodeInvalidMessage, "missing_field"},
		{4, "missing v is a missing field", edit(t, plain, func(m map[string][]byte) { expired(f)(m); m["v"] = nil }), CodeInvalidMessage, "missing_field"},
		{4, "body and enc together", edit(t, enc, func(m map[string][]byte) { expired(f)(m); m["body"] = []byte{0xf6} }), CodeInvalidMessage, "body_and_enc"},
		{4, "from is not a did", edit(t, plain, func(m map[string][]byte) { expired(f)(m); m["from"] = appendText(nil, "alice") }), CodeInvalidMessage, "invalid_did"},
		{4, "enc of another algorithm", edit(t, enc, func(m map[string][]byte) {
			expired(f)(m)
			m["enc"] = appendMap(nil, []field{{textKey("alg"), appendText(nil, "AES")}, {textKey("mode"), appendText(nil, EncMode)},
				{textKey("nonce"), appendBytes(nil, make([]byte, 24))}, {textKey("ciphertext"), appendBytes(nil, make([]byte, 20))}})
		}), CodeInvalidMessage, "unsupported_encryption"},
		{5, "time: expired", edit(t, plain, func(m map[string][]byte) {
			expired(f)(m)
			m["from"] = appendText(nil, "did:web:nobody.example")
			flipSig(m)
		}), CodeInvalidTimestamp, "expired"},
		{6, "sender: unknown did", edit(t, plain, func(m map[string][]byte) {
			m["from"] = appendText(nil, "did:web:nobody.example")
			flipSig(m)
		}), CodeUnauthorized, "unknown_did"},
		{6, "sender: no agreement key for an encrypted message", edit(t, webEnc, func(m map[string][]byte) {
			e := m["enc"]
			c := append([]byte{}, e...)
			c[len(c)-1] ^= 1 // also undecryptable
			m["enc"] = c
			flipSig(m)
		}), CodeUnauthorized, "no_eligible_key"},
		{7, "decryption", edit(t, enc, func(m map[string][]byte) {
			c := append([]byte{}, m["enc"]...)
			c[len(c)-1] ^= 1
			m["enc"] = c
			flipSig(m)
		}), CodeUnauthorized, "decryption_failed"},
		{8, "signature", edit(t, plain, flipSig), CodeInvalidSignature, "invalid_signature"},
		{8, "signature of an encrypted message", edit(t, enc, flipSig), CodeInvalidSignature, "invalid_signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.recv.Receive(context.Background(), tt.msg)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("step %d: got %v, want an *Error", tt.step, err)
			}
			if e.Code != tt.code || e.Name != tt.err {
				t.Fatalf("step %d: got %d %s (%v), want %d %s", tt.step, e.Code, e.Name, err, tt.code, tt.err)
			}
		})
	}
	// The unbroken messages are valid.
	for _, m := range [][]byte{plain, enc} {
		if _, err := f.recv.Receive(context.Background(), m); err != nil {
			t.Fatalf("valid message refused: %v", err)
		}
	}
}

// TestReceiveTime covers the boundaries of RFC 001 §8.3 and docs/SPEC-DECISIONS.md AMP-7, AMP-8.
func TestReceiveTime(t *testing.T) {
	f := newFixture(t)
	base := uint64(f.now.UnixMilli())
	mk := func(ts, ttl, idTS uint64) []byte {
		id, _ := NewID(&seqReader{}, idTS)
		m := &Message{V: 1, ID: id, Type: TypeMessage, TS: ts, TTL: ttl, From: f.alice.DID, To: To(f.bob.DID)}
		if err := Sign(m, f.alice.SigningKey); err != nil {
			t.Fatal(err)
		}
		return m.Encode()
	}
	skew := uint64(DefaultMaxClockSkew.Milliseconds())
	tests := []struct {
		name          string
		ts, ttl, idTS uint64
		err           ErrName
	}{
		{"fresh", base, 1000, base, ""},
		{"expires exactly now", base - 1000, 1000, base - 1000, ""},
		{"expired by 1 ms", base - 1001, 1000, base - 1001, "expired"},
		{"ttl 0 within the skew (SPEC-DECISIONS AMP-8)", base - skew, 0, base - skew, ""},
		{"ttl 0 older than the skew", base - skew - 1, 0, base - skew - 1, "expired"},
		{"future within the skew", base + skew, 1000, base + skew, ""},
		{"future beyond the skew", base + skew + 1, 1000, base + skew + 1, "future_timestamp"},
		{"id 1 s after ts", base, 1000, base + 1000, ""},
		{"id 1 s before ts", base, 1000, base - 1000, ""},
		{"id more than 1 s after ts", base, 1000, base + 1001, "id_timestamp_mismatch"},
		{"id more than 1 s before ts", base, 1000, base - 1001, "id_timestamp_mismatch"},
		{"huge ttl does not overflow", base - 5, 1<<64 - 1, base - 5, ""},
		{"ts 0", 0, 1000, 0, "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.recv.Receive(context.Background(), mk(tt.ts, tt.ttl, tt.idTS))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.err) || !errors.Is(err, CodeInvalidTimestamp) {
				t.Fatalf("got %v, want 1003 %s", err, tt.err)
			}
		})
	}
}

// TestTaggedBodyVerifies is docs/SPEC-DECISIONS.md AMP-9: a body with tags, bignums, floats,
// negative integers, nested maps with non-text keys and an unknown tag
// verifies when it was signed correctly, also when it travels in a
// non-deterministic encoding of the same values.
func TestTaggedBodyVerifies(t *testing.T) {
	f := newFixture(t)
	// Keys in deterministic order: hlf, neg, time, float, negbn, bigint,
	// nested, unknown.
	body := hx(`a8
		63686c66 f93c00
		636e6567 3903e7
		6474696d65 c11a6553f100
		65666c6f6174 fb3fb999999999999a
		656e6567626e c3490100000000000000ff
		66626967696e74 c249010000000000000000
		666e6573746564 a2 01 a1 f5 80 20 c1 00
		67756e6b6e6f776e d9c350 a1 40 f4`)
	canonical, err := Limits{}.Canonical(body)
	if err != nil {
		t.Fatalf("body refused: %v", err)
	}
	if !bytes.Equal(canonical, body) {
		// The literal above is written in deterministic order; if not,
		// fix the literal rather than the check.
		t.Fatalf("test body is not deterministic:\n%x\n%x", body, canonical)
	}
	msg := f.seal(t, Draft{Body: body})
	got, err := f.recv.Receive(context.Background(), msg)
	if err != nil {
		t.Fatalf("tagged body did not verify: %v", err)
	}
	if !bytes.Equal(got.Body, body) {
		t.Fatalf("verified body changed:\n%x\n%x", got.Body, body)
	}
	// The same values in a non-deterministic encoding on the wire: keys out
	// of order, a long integer head, a float64 where float16 suffices.
	loose := hx(`a8
		636e6567 3903e7
		6474696d65 c11b000000006553f100
		66626967696e74 c249010000000000000000
		656e6567626e c3490100000000000000ff
		65666c6f6174 fb3fb999999999999a
		63686c66 fb3ff0000000000000
		666e6573746564 a2 20 c1 1800 01 a1 f5 80
		67756e6b6e6f776e d9c350 a1 40 f4`)
	wire := edit(t, msg, func(m map[string][]byte) { m["body"] = loose })
	if _, err := f.recv.Receive(context.Background(), wire); err != nil {
		t.Fatalf("non-deterministic encoding of a correctly signed body refused: %v", err)
	}
	// And a changed value does not verify.
	changed := bytes.Replace(loose, hx("3903e7"), hx("3903e8"), 1)
	if _, err := f.recv.Receive(context.Background(), edit(t, msg, func(m map[string][]byte) { m["body"] = changed })); !errors.Is(err, CodeInvalidSignature) {
		t.Fatalf("changed body: got %v, want 1002", err)
	}
}

// TestEncryptedRoundTrip covers authcrypt end to end, key rotation on the
// receiving side, and a message encrypted for someone else (3001).
func TestEncryptedRoundTrip(t *testing.T) {
	f := newFixture(t)
	msg := f.seal(t, Draft{Body: hx("a1636d736766736563726574"), Encrypt: true})
	if bytes.Contains(msg, []byte("secret")) {
		t.Fatal("plaintext visible in an encrypted message")
	}
	got, err := f.recv.Receive(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Encrypted() || !bytes.Equal(got.Body, hx("a1636d736766736563726574")) {
		t.Fatalf("decrypted body %x", got.Body)
	}
	// Rotation: the receiver holds an older key first.
	old, _ := NewAgreementKey([32]byte{9})
	r2, err := NewReceiver(ReceiverConfig{Now: func() time.Time { return f.now }, AgreementKeys: []*AgreementKey{old, f.bobX}, SharedKeys: NewSharedKeys(2)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // cached shared keys give the same answer
		if _, err := r2.Receive(context.Background(), msg); err != nil {
			t.Fatalf("rotation: %v", err)
		}
	}
	// Wrong recipient.
	r3, _ := NewReceiver(ReceiverConfig{Now: func() time.Time { return f.now }, AgreementKeys: []*AgreementKey{old}})
	if _, err := r3.Receive(context.Background(), msg); !errors.Is(err, ErrName("decryption_failed")) || !errors.Is(err, CodeUnauthorized) {
		t.Fatalf("wrong recipient key: got %v", err)
	}
	// An encrypted body that is not CBOR is refused after the signature.
	m := &Message{V: 1, Type: TypeMessage, TS: uint64(f.now.UnixMilli()), TTL: 1000, From: f.alice.DID, To: To(f.bob.DID)}
	m.ID, _ = NewID(&seqReader{}, m.TS)
	m.Body = []byte{0xf6}
	if err := Sign(m, f.alice.SigningKey); err != nil {
		t.Fatal(err)
	}
	m.Body = []byte{0x1c} // not CBOR; re-sign over the raw bytes
	m.Sig = ed25519.Sign(f.alice.SigningKey, m.SigInput())
	var nonce [24]byte
	if err := Encrypt(m, f.aliceX, &f.bobX.Public, &nonce, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.recv.Receive(context.Background(), m.Encode()); !errors.Is(err, ErrName("invalid_body")) {
		t.Fatalf("non-cbor plaintext: got %v", err)
	}
}

func TestReceiveHandshakeVersion(t *testing.T) {
	f := newFixture(t)
	r, err := NewReceiver(ReceiverConfig{Now: func() time.Time { return f.now }, Versions: []uint64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := NewSender(SenderConfig{Identity: f.alice, Rand: &seqReader{}, Now: func() time.Time { return f.now }, Version: 2})
	_, msg, err := s2.Seal(context.Background(), Draft{Type: TypeMessage, To: To(f.bob.DID)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Receive(context.Background(), msg); err != nil {
		t.Fatalf("v2 message refused by a v1+v2 receiver: %v", err)
	}
	_, hello, err := s2.Seal(context.Background(), Draft{Type: TypeHello, To: To(f.bob.DID), Body: hx("a16876657273696f6e73816131")})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Receive(context.Background(), hello)
	if err != nil || m.V != 1 {
		t.Fatalf("hello is sent with v = 1: %v %v", m, err)
	}
	forged := edit(t, hello, func(m map[string][]byte) { m["v"] = u(2) })
	if _, err := r.Receive(context.Background(), forged); !errors.Is(err, CodeUnsupportedVersion) {
		t.Fatalf("hello with v = 2: got %v, want 1004", err)
	}
}

func TestNewReceiverRefusesMisconfiguration(t *testing.T) {
	if _, err := NewReceiver(ReceiverConfig{}); err == nil {
		t.Fatal("receiver without a clock accepted")
	}
	if _, err := NewReceiver(ReceiverConfig{Now: time.Now, AgreementKeys: []*AgreementKey{nil}}); err == nil {
		t.Fatal("nil agreement key accepted")
	}
	if _, err := NewSender(SenderConfig{Identity: Identity{DID: "did:key:x"}}); err == nil {
		t.Fatal("sender without keys accepted")
	}
}

// TestThreadIDIsBoundedBothWays: a thread_id or reply_to of 256 bytes is
// received, one byte more is refused as 1001 before the signature is
// checked (threat: a caller making every reply the agent records as large
// as a message), and Seal never produces what a receiver refuses.
func TestThreadIDIsBoundedBothWays(t *testing.T) {
	f := newFixture(t)
	at := f.seal(t, Draft{Body: hx("a1616101"), ThreadID: bytes.Repeat([]byte{7}, MaxRefBytes), ReplyTo: bytes.Repeat([]byte{8}, MaxRefBytes)})
	if _, err := f.recv.Receive(context.Background(), at); err != nil {
		t.Fatalf("thread_id and reply_to of %d bytes: %v", MaxRefBytes, err)
	}
	over := edit(t, at, func(m map[string][]byte) { m["thread_id"] = appendBytes(nil, make([]byte, MaxRefBytes+1)) })
	if _, err := f.recv.Receive(context.Background(), over); CodeOf(err) != CodeInvalidMessage || NameOf(err) != "wrong_shape" {
		t.Fatalf("thread_id of %d bytes: %v, want 1001 wrong_shape", MaxRefBytes+1, err)
	}
	for _, d := range []Draft{{ThreadID: make([]byte, MaxRefBytes+1)}, {ReplyTo: make([]byte, MaxRefBytes+1)}} {
		d.Type, d.To, d.Body = TypeMessage, To(f.bob.DID), hx("01")
		if _, _, err := f.sender.Seal(context.Background(), d); err == nil {
			t.Fatal("Seal made a message with a reference over the bound")
		}
	}
}
