package amp

import (
	"bytes"
	"context"
	"encoding/hex"
	"sort"
	"testing"
)

// decodeEnvelopeTwoPass is the envelope split as it was before the scanner
// recorded the top-level pairs: the whole item checked first, then walked
// again from its head. It is the reference the one-pass split must match.
func decodeEnvelopeTwoPass(data []byte, l Limits) (rawMessage, error) {
	out, err := l.Canonical(data)
	if err != nil {
		return rawMessage{}, err
	}
	h, _ := ReadHead(data, 0)
	if h.Major != MajorMap {
		return rawMessage{}, Named(CodeInvalidMessage, "wrong_shape", "message is not a cbor map")
	}
	r := rawMessage{canonical: l.IsCanonical(data) && bytes.Equal(out, data)}
	if err := r.setByWalk(data, h); err != nil {
		return rawMessage{}, err
	}
	return r, nil
}

// differentField returns the index of the first field that a and b hold
// differently (present in one only, or other bytes), or -1.
func differentField(a, b rawMessage) int {
	af := [][]byte{a.v, a.id, a.typ, a.ts, a.ttl, a.from, a.to, a.replyTo, a.threadID, a.sig, a.body, a.enc, a.ext}
	bf := [][]byte{b.v, b.id, b.typ, b.ts, b.ttl, b.from, b.to, b.replyTo, b.threadID, b.sig, b.body, b.enc, b.ext}
	for i := range af {
		if (af[i] == nil) != (bf[i] == nil) || !bytes.Equal(af[i], bf[i]) {
			return i
		}
	}
	return -1
}

// envelopeVariants derives, from one well-formed message, the shapes a
// hostile sender would try against a split that takes shortcuts: keys out
// of order, long-form heads, a repeated field (first or last copy wins?),
// more pairs than there are envelope fields, an unknown field, a `to`
// array holding a non-text element, a non-map, trailing bytes.
func envelopeVariants(t testing.TB, msg []byte) [][]byte {
	t.Helper()
	keys, vals, err := mapEntries(msg, "message")
	if err != nil {
		t.Fatalf("seed is not an envelope map: %v", err)
	}
	pairs := make([]field, len(keys))
	for i := range keys {
		pairs[i] = field{textKey(keys[i]), vals[i]}
	}
	build := func(ps []field) []byte {
		out := AppendHead(nil, MajorMap, uint64(len(ps)))
		for _, p := range ps {
			out = append(append(out, p.k...), p.v...)
		}
		return out
	}
	with := func(extra ...field) []field { return append(append([]field(nil), pairs...), extra...) }
	reversed := make([]field, len(pairs))
	for i, p := range pairs {
		reversed[len(pairs)-1-i] = p
	}
	out := [][]byte{msg, build(reversed)}
	// Long-form heads: every unsigned value written with an 8-byte
	// argument (accepted, then canonicalized; not deterministic).
	long := make([]field, len(pairs))
	for i, p := range pairs {
		long[i] = p
		if h, _ := ReadHead(p.v, 0); h.Major == MajorUint {
			v := []byte{MajorUint<<5 | 27, 0, 0, 0, 0, 0, 0, 0, 0}
			for j := 0; j < 8; j++ {
				v[1+j] = byte(h.Arg >> (56 - 8*j))
			}
			long[i].v = v
		}
	}
	out = append(out, build(long))
	// A repeated field, in and out of order.
	out = append(out, build(with(pairs[0])), build(append([]field{pairs[len(pairs)-1]}, pairs...)))
	// An unknown field, and more pairs than envelope fields.
	out = append(out, build(with(field{textKey("zz"), []byte{0x01}})))
	many := with()
	for i := 0; len(many) <= envelopeFields+2; i++ {
		many = append(many, field{textKey("x" + string(rune('a'+i))), []byte{0x00}})
	}
	sort.Slice(many, func(i, j int) bool { return bytes.Compare(many[i].k, many[j].k) < 0 })
	out = append(out, build(many))
	// `to` as an array with a non-text element, and as an empty array.
	for _, to := range [][]byte{hx("826161 01"), hx("80"), hx("8161 61")} {
		ps := with()
		for i := range ps {
			if bytes.Equal(ps[i].k, textKey("to")) {
				ps[i].v = to
			}
		}
		out = append(out, build(ps))
	}
	// Not a map; trailing bytes; truncated.
	out = append(out, hx("8101"), append(append([]byte{}, msg...), 0x00), msg[:len(msg)-1])
	return out
}

// TestEnvelopeSplitInOnePassMatchesTwoPasses: the envelope is split into
// its fields by the same walk that checks the caps (one pass instead of
// two). A split that disagreed with a full walk would let a crafted
// envelope hand the signature check one field and the rest of the agent
// another; so over every RFC 001 vector and its hostile variants, the
// one-pass split must give the same fields, the same verdict on
// deterministic form, and the same error as the two-pass reference.
func TestEnvelopeSplitInOnePassMatchesTwoPasses(t *testing.T) {
	seeds := seedMessages(t)
	cases := 0
	for _, seed := range seeds {
		if h, _ := ReadHead(seed, 0); h.Major != MajorMap {
			continue
		}
		// The seed itself must take the one-pass path, not the fallback
		// walk (else this test would compare the reference with itself).
		if _, top, err := (Limits{}).check(seed, true); err != nil || !top.complete() || top.n == 0 {
			t.Fatalf("%x: the scanner did not record the envelope's pairs (%d recorded, %v)", seed, top.n, err)
		}
		for _, data := range envelopeVariants(t, seed) {
			cases++
			for _, l := range []Limits{{}, {MaxItems: 12}, {MaxMessageSize: len(data) - 1}} {
				got, gerr := decodeEnvelope(data, l)
				want, werr := decodeEnvelopeTwoPass(data, l)
				if (gerr == nil) != (werr == nil) || CodeOf(gerr) != CodeOf(werr) || NameOf(gerr) != NameOf(werr) {
					t.Fatalf("%x: one pass says %v, two passes say %v", data, gerr, werr)
				}
				if gerr != nil {
					continue
				}
				if got.canonical != want.canonical {
					t.Fatalf("%x: deterministic form: one pass %v, two passes %v", data, got.canonical, want.canonical)
				}
				if i := differentField(got, want); i >= 0 {
					t.Fatalf("%x: field %d differs between one pass and two passes", data, i)
				}
				// The body of a deterministic message is used as it
				// is: it must then be its own deterministic form.
				if got.canonical && got.body != nil {
					if c, err := (Limits{}).Canonical(got.body); err != nil || !bytes.Equal(c, got.body) {
						t.Fatalf("%x: body of a deterministic message is not deterministic: %x (%v)", data, c, err)
					}
				}
			}
		}
	}
	if cases < 50 {
		t.Fatalf("checked %d envelopes; the vectors must give at least 50", cases)
	}
}

// TestSigInputInCallerBufferIsTheRFCBytes: Receive and Sign build
// Sig_Input in a reused (stack) buffer. Whatever that buffer holds or
// however small it is, the bytes signed and verified must be exactly the
// RFC 001 §8.1 Sig_Input of each Appendix A vector, read from the
// received message.
func TestSigInputInCallerBufferIsTheRFCBytes(t *testing.T) {
	env := loadVectorEnv(t)
	checked := 0
	for name, v := range loadVectors(t) {
		if v.Expect != "valid" {
			continue
		}
		r := env.receiver(t, v.Recipient, v.NowMS)
		m, err := r.Receive(context.Background(), mustHex(t, v.Output.Message))
		if err != nil {
			t.Fatalf("%s: receive: %v", name, err)
		}
		want := mustHex(t, v.Output.SigInput)
		var stack [sigInputStack]byte
		for _, dst := range [][]byte{nil, stack[:0], make([]byte, 0, 3), []byte("prefix")} {
			prefix := append([]byte(nil), dst...)
			got := m.AppendSigInput(dst)
			if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
				t.Fatalf("%s: Sig_Input in a buffer of cap %d\n got %s\nwant %s%s", name, cap(dst),
					hex.EncodeToString(got), hex.EncodeToString(prefix), v.Output.SigInput)
			}
		}
		if !bytes.Equal(m.SigInput(), want) {
			t.Fatalf("%s: SigInput differs from the vector", name)
		}
		checked++
	}
	if checked != 7 {
		t.Fatalf("checked %d positive vectors, want 7", checked)
	}
}

// TestSigInputOverStackBufferIsComplete: a body larger than the stack
// buffer (and many recipients) must not be cut: the signed bytes grow to
// hold all of it, and a signature made in the buffer verifies against a
// freshly allocated Sig_Input.
func TestSigInputOverStackBufferIsComplete(t *testing.T) {
	big := appendBytes(nil, bytes.Repeat([]byte{0xab}, 3*sigInputStack))
	dids := make([]string, 40)
	for i := range dids {
		dids[i] = "did:web:example.com:agent:" + string(rune('a'+i%26)) + "-recipient-with-a-long-name"
	}
	for _, m := range []*Message{
		{ID: ID{1}, Type: TypeMessage, TS: 1, TTL: 2, From: "did:web:a.example", To: To("did:web:b.example"), Body: big},
		{ID: ID{2}, Type: TypeMessage, TS: 1, From: "did:web:a.example", To: ToList(dids...), ReplyTo: bytes.Repeat([]byte{1}, 300), ThreadID: []byte{2}},
	} {
		var stack [sigInputStack]byte
		got := m.AppendSigInput(stack[:0])
		if !bytes.Equal(got, m.SigInput()) || !(Limits{}).IsCanonical(got) {
			t.Fatalf("Sig_Input of %d bytes built in a %d-byte buffer differs from the allocated one", len(got), len(stack))
		}
		body := m.Body
		if body == nil {
			body = []byte{0xf6}
		}
		if !bytes.HasSuffix(got, appendBytes(nil, body)) || !bytes.HasPrefix(got, hx("84 66414d502d7631 40")) {
			t.Fatalf("Sig_Input of %d bytes does not end with the whole body or start with the context", len(got))
		}
		if m.sigInputSize() < len(got) {
			t.Fatalf("sigInputSize %d is below the Sig_Input's %d bytes", m.sigInputSize(), len(got))
		}
	}
}

// FuzzEnvelopeSplit: for any bytes, the one-pass envelope split agrees with
// the two-pass reference (same fields, same verdict, same error).
func FuzzEnvelopeSplit(f *testing.F) {
	for _, m := range seedMessages(f) {
		for _, v := range envelopeVariants(f, m) {
			f.Add(v)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := Limits{MaxMessageSize: 1 << 16}
		got, gerr := decodeEnvelope(data, l)
		want, werr := decodeEnvelopeTwoPass(data, l)
		if (gerr == nil) != (werr == nil) || NameOf(gerr) != NameOf(werr) {
			t.Fatalf("one pass says %v, two passes say %v", gerr, werr)
		}
		if gerr == nil && (got.canonical != want.canonical || differentField(got, want) >= 0) {
			t.Fatalf("one pass and two passes split the envelope differently")
		}
	})
}
