package amp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func hx(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// TestCanonical covers what the strict decoder accepts, what it refuses (with
// the name of the refusal) and the deterministic form it produces.
func TestCanonical(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // canonical hex; "" when an error is expected
		err  ErrName
	}{
		{"uint already minimal", "01", "01", ""},
		{"non-minimal uint", "1801", "01", ""},
		{"non-minimal uint32", "1a00000100", "190100", ""},
		{"negative int kept", "3863", "3863", ""},
		{"non-minimal negative int", "390063", "3863", ""},
		{"map keys sorted by encoded bytes", "a2 626262 01 6161 02", "a2 6161 02 626262 01", ""},
		{"shorter text keys first (SPEC-DECISIONS AMP-4)", "a2 6161 01 60 02", "a2 60 02 6161 01", ""},
		{"nested map with non-text keys", "a2 20 80 01 a1 f5 f4", "a2 01 a1 f5 f4 20 80", ""},
		{"tag 1 epoch kept", "c11a5f5e1000", "c11a5f5e1000", ""},
		{"tag 1 with non-minimal content", "c11b000000005f5e1000", "c11a5f5e1000", ""},
		{"tag 2 bignum kept as is", "c249010000000000000000", "c249010000000000000000", ""},
		{"unknown tag kept", "d9ffff01", "d9ffff01", ""},
		{"non-minimal tag number", "d80101", "c101", ""},
		{"float64 shrinks to float16", "fb3ff8000000000000", "f93e00", ""},
		{"float32 shrinks to float16", "fa3fc00000", "f93e00", ""},
		{"float64 that needs 64 bits kept", "fb3fb999999999999a", "fb3fb999999999999a", ""},
		{"float64 shrinks to float32", "fb3ff0000020000000", "fa3f800001", ""},
		{"negative zero kept", "fb8000000000000000", "f98000", ""},
		{"infinity shrinks", "fb7ff0000000000000", "f97c00", ""},
		{"quiet nan shrinks", "fb7ff8000000000000", "f97e00", ""},
		{"nan payload kept", "fb7ff8000000000001", "fb7ff8000000000001", ""},
		{"simple values", "84f4f5f6f7", "84f4f5f6f7", ""},
		{"simple value 32", "f820", "f820", ""},
		{"empty byte string and map", "8240a0", "8240a0", ""},
		{"duplicate keys", "a2 6161 01 6161 02", "", "duplicate_map_key"},
		{"duplicate keys hidden by a long length", "a2 6161 01 780161 02", "", "duplicate_map_key"},
		{"duplicate integer keys hidden by width", "a2 01 01 1801 02", "", "duplicate_map_key"},
		{"indefinite array", "9f01ff", "", "indefinite_length"},
		{"indefinite byte string", "5f4101ff", "", "indefinite_length"},
		{"indefinite map", "bf6161 01 ff", "", "indefinite_length"},
		{"lone break", "ff", "", "invalid_message"},
		{"trailing bytes", "0102", "", "invalid_message"},
		{"truncated text", "6261", "", "truncated"},
		{"truncated head", "19 01", "", "truncated"},
		{"invalid utf-8", "62c328", "", "invalid_utf8"},
		{"reserved additional information", "1c", "", "invalid_message"},
		{"ill-formed simple value", "f810", "", "invalid_message"},
		{"hostile array length", "9bffffffffffffffff", "", "limit_exceeded"},
		{"hostile byte string length", "5b00000000ffffffff00", "", "limit_exceeded"},
		{"array length over the remaining bytes", "8a01", "", "truncated"},
		{"map length over the remaining bytes", "a5 01", "", "truncated"},
		{"empty input", "", "", "invalid_message"},
	}
	l := Limits{MaxStringLen: 1 << 20, MaxArrayLen: 1 << 20}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.Canonical(hx(tt.in))
			if tt.err != "" {
				if err == nil {
					t.Fatalf("accepted %s as %x; want %s", tt.in, got, tt.err)
				}
				if !errors.Is(err, tt.err) || !errors.Is(err, CodeInvalidMessage) {
					t.Fatalf("got %v; want 1001 %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !bytes.Equal(got, hx(tt.want)) {
				t.Fatalf("got %x, want %s", got, strings.ReplaceAll(tt.want, " ", ""))
			}
			// Deterministic output is a fixed point.
			again, err := l.Canonical(got)
			if err != nil || !bytes.Equal(again, got) || !l.IsCanonical(got) {
				t.Fatalf("canonical form %x is not a fixed point", got)
			}
		})
	}
}

// TestCanonicalLimits checks each cap at its boundary.
func TestCanonicalLimits(t *testing.T) {
	nest := func(n int) []byte { return append(bytes.Repeat([]byte{0x81}, n), 0x01) }
	l := Limits{MaxDepth: 4, MaxArrayLen: 3, MaxMapPairs: 2, MaxStringLen: 5, MaxMessageSize: 64}
	ok := [][]byte{nest(4), hx("83010203"), hx("a2010102 02"), hx("4500000000 00"), hx("6568656c6c6f")}
	bad := [][]byte{nest(5), hx("8401020304"), hx("a3010102020303"), hx("46000000000000"), bytes.Repeat([]byte{0x40}, 1)}
	bad[4] = append(hx("5841"), make([]byte, 65)...) // over the message size
	for i, in := range ok {
		if _, err := l.Canonical(in); err != nil {
			t.Errorf("ok[%d] %x refused: %v", i, in, err)
		}
	}
	for i, in := range bad {
		if _, err := l.Canonical(in); err == nil {
			t.Errorf("bad[%d] %x accepted", i, in)
		} else if CodeOf(err) != CodeInvalidMessage {
			t.Errorf("bad[%d]: code %d, want 1001", i, CodeOf(err))
		}
	}
	// Tags count towards the depth too.
	if _, err := l.Canonical(hx("c1c1c1c1c101")); err == nil {
		t.Error("five nested tags accepted with MaxDepth 4")
	}
}

// TestCanonicalFloatOracle checks the float rules against fxamacker's own
// deterministic encoder for random values: the value is kept bit for bit
// and the width is the shortest that keeps it.
func TestCanonicalFloatOracle(t *testing.T) {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []float64{0, 1, -1, 0.5, 65504, 65505, 6.103515625e-05, 5.960464477539063e-08, 1e-45, math.MaxFloat32, math.SmallestNonzeroFloat32, math.Inf(-1), 1.0000001, 3.4028235e38}
	for i := 0; i < 20000; i++ {
		var f float64
		switch {
		case i < len(specials):
			f = specials[i]
		case i%3 == 0:
			f = float64(math.Float32frombits(rng.Uint32()))
		case i%3 == 1:
			// values with few mantissa bits, to hit the float16 range
			f = math.Ldexp(float64(rng.IntN(2048)), rng.IntN(60)-40)
		default:
			f = math.Float64frombits(rng.Uint64())
		}
		if math.IsNaN(f) {
			continue // fxamacker rewrites NaN payloads; we keep them (TestCanonical)
		}
		in := make([]byte, 9)
		in[0] = 0xfb
		binary.BigEndian.PutUint64(in[1:], math.Float64bits(f))
		got, err := Limits{}.Canonical(in)
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		want, _ := em.Marshal(f)
		if !bytes.Equal(got, want) {
			t.Fatalf("float %v (%x): got %x, fxamacker core deterministic gives %x", f, in, got, want)
		}
		var back float64
		if err := cbor.Unmarshal(got, &back); err != nil || math.Float64bits(back) != math.Float64bits(f) {
			t.Fatalf("float %v did not survive: %x -> %v", f, got, back)
		}
	}
}

func TestMarshalIsDeterministic(t *testing.T) {
	v := map[string]any{"zz": 1, "a": []any{uint64(2), -3, "x"}, "bb": map[int]string{2: "b", 1: "a"}, "f": 1.5}
	a, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !(Limits{}).IsCanonical(a) {
		t.Fatalf("Marshal output %x is not deterministic", a)
	}
	want := hx("a4 6161 83 02 22 6178 6166 f93e00 626262 a2 01 6161 02 6162 627a7a 01")
	if !bytes.Equal(a, want) {
		t.Fatalf("got %x\nwant %x", a, want)
	}
}

func TestUnmarshalShape(t *testing.T) {
	var s struct {
		A uint64 `cbor:"a"`
	}
	if err := Unmarshal(hx("a1616101"), &s); err != nil || s.A != 1 {
		t.Fatalf("got %v %v", s, err)
	}
	err := Unmarshal(hx("a1616161 78"), &s)
	if !errors.Is(err, ErrName("wrong_shape")) || CodeOf(err) != CodeInvalidMessage {
		t.Fatalf("wrong type: got %v, want 1001 wrong_shape", err)
	}
	if err := Unmarshal(hx("a2616101616102"), &s); !errors.Is(err, ErrName("duplicate_map_key")) {
		t.Fatalf("duplicate key: got %v", err)
	}
}

// TestFixedKeyOrder checks the fixed key orders used by SigInput and Encode
// against a sort by encoded bytes (RFC 8949 §4.2.1).
func TestFixedKeyOrder(t *testing.T) {
	for _, keys := range [][]string{
		{"id", "to", "ts", "ttl", "typ", "from", "reply_to", "thread_id"},
		{"v", "id", "to", "ts", "enc", "ext", "sig", "ttl", "typ", "body", "from", "reply_to", "thread_id"},
		{"alg", "mode", "nonce", "ciphertext"},
	} {
		for i := 1; i < len(keys); i++ {
			if bytes.Compare(textKey(keys[i-1]), textKey(keys[i])) >= 0 {
				t.Fatalf("%q does not sort before %q", keys[i-1], keys[i])
			}
		}
	}
	// Every combination of optional fields encodes deterministically.
	f := newFixture(t)
	for _, m := range []*Message{
		{V: 1, Type: TypePing, From: f.alice.DID, To: To(f.bob.DID), Sig: make([]byte, 64)},
		{V: 1, Type: TypePing, From: f.alice.DID, To: ToList(f.bob.DID, f.alice.DID), Sig: make([]byte, 64), ReplyTo: []byte{}, ThreadID: []byte{1}, Ext: []byte{0xa0}},
		{V: 1, Type: TypePing, From: f.alice.DID, To: To(f.bob.DID), Sig: make([]byte, 64), Enc: &Encrypted{Alg: EncAlg, Mode: EncMode, Nonce: make([]byte, 24), Ciphertext: []byte{1}}, Ext: []byte{0xa0}},
	} {
		if enc := m.Encode(); !(Limits{}).IsCanonical(enc) {
			t.Fatalf("encoding %x is not deterministic", enc)
		}
		if si := m.SigInput(); !(Limits{}).IsCanonical(si) {
			t.Fatalf("sig input %x is not deterministic", si)
		}
	}
}
