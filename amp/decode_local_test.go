package amp

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// signedOwn is a plaintext reply as an agent signs it.
func signedOwn(t testing.TB) (*Message, []byte) {
	t.Helper()
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	did := DIDKey(k.Public().(ed25519.PublicKey))
	m := &Message{V: 1, ID: ID{1, 2, 3}, Type: TypeCapResult, TS: 1707055260000, TTL: 60_000, From: did,
		To: To("did:web:example.com:agent:bob"), ReplyTo: []byte{9, 9}, Body: []byte{0xa1, 0x61, 0x61, 0x01}}
	if err := Sign(m, k); err != nil {
		t.Fatal(err)
	}
	return m, m.Encode()
}

// TestDecodeOwnRefusesWhatItCannotRead: DecodeOwn returns exactly the
// fields of a message it is given whole, and refuses with a 1001 (never a
// panic, never a partial message) what is not one: an encrypted message
// (its body needs decryption), a message missing a required field, bytes
// that are not a message, trailing bytes.
func TestDecodeOwnRefusesWhatItCannotRead(t *testing.T) {
	want, data := signedOwn(t)
	got, err := Limits{}.DecodeOwn(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != want.Type || got.ID != want.ID || got.From != want.From || !bytes.Equal(got.Body, want.Body) ||
		!bytes.Equal(got.ReplyTo, want.ReplyTo) || !bytes.Equal(got.Sig, want.Sig) || !bytes.Equal(got.Encode(), data) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	enc := *want
	enc.Enc = &Encrypted{Alg: EncAlg, Mode: EncMode, Nonce: make([]byte, NonceSize), Ciphertext: []byte{1, 2, 3}}
	for _, tc := range []struct {
		name string
		data []byte
		want ErrName
	}{
		{"encrypted", enc.Encode(), "encrypted_body"},
		{"empty map", []byte{0xa0}, "missing_field"},
		{"not a map", []byte{0x01}, "wrong_shape"},
		{"trailing bytes", append(append([]byte{}, data...), 0x00), ""},
		{"truncated", data[:len(data)-3], ""},
		{"empty", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Limits{}.DecodeOwn(tc.data)
			if err == nil || m != nil {
				t.Fatalf("accepted: %+v", m)
			}
			if CodeOf(err) != CodeInvalidMessage || (tc.want != "" && NameOf(err) != tc.want) {
				t.Fatalf("got %d %q, want 1001 %q: %v", CodeOf(err), NameOf(err), tc.want, err)
			}
		})
	}
}

// FuzzDecodeOwn: any input is refused with an AMP error or decoded into a
// message that re-encodes to the input's deterministic form.
func FuzzDecodeOwn(f *testing.F) {
	_, data := signedOwn(f)
	f.Add(data)
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Limits{MaxMessageSize: 1 << 16}.DecodeOwn(data)
		if err != nil {
			checkAMPError(t, err)
			return
		}
		canon, err := Limits{}.Canonical(data)
		if err != nil {
			t.Fatalf("accepted a message that is not canonicalizable: %v", err)
		}
		if !bytes.Equal(m.Encode(), canon) {
			t.Fatalf("re-encoding changed the message:\n in %x\nout %x", canon, m.Encode())
		}
	})
}
