package ampstcp

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// FuzzReadFrame: no panic, every refusal is an AMP error or an I/O end,
// and an accepted frame re-encodes to the bytes it was read from.
func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{"00000004 01 a0 0102", "00000001 03", "00000000 01", "ffffffff 01", "00000001 07", "00000002 05", "0000"} {
		f.Add(unhex(f, s))
	}
	f.Add(AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := readOne(data, 1<<16)
		if err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, new(*amp.Error)) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		enc := AppendFrame(nil, fr.Type, fr.Payload)
		if !bytes.Equal(enc, data[:len(enc)]) {
			t.Fatalf("re-encoded %x from %x", enc, data)
		}
	})
}

// FuzzDecodeHandshake: request, response and ERROR payload decoders never
// panic, refuse with an AMP error, and what they accept encodes back to
// something they accept with the same values.
func FuzzDecodeHandshake(f *testing.F) {
	eb := amp.ErrorBodyOf(amp.NewError(amp.CodeUnsupportedVersion, "no"))
	f.Add(EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20, DID: "did:key:z", Token: []byte{1}}))
	f.Add(EncodeHandshakeResponse(HandshakeResponse{Version: 1, Accepted: true, MaxMsgSize: 1 << 24}))
	f.Add(EncodeHandshakeResponse(HandshakeResponse{Version: 2, MaxMsgSize: 1, Error: &eb}))
	f.Add(EncodeErrorFrame(amp.NewError(amp.CodeOverloaded, "busy"), bytes.Repeat([]byte{1}, 16)))
	f.Add(unhex(f, "a3 6776657273696f6e 01 6776657273696f6e 02 6c6d61785f6d73675f73697a65 1a00100000"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			if err != nil && !errors.As(err, new(*amp.Error)) {
				t.Fatalf("error %T %v", err, err)
			}
		}
		q, err := DecodeHandshakeRequest(data)
		check(err)
		if err == nil {
			q2, err := DecodeHandshakeRequest(EncodeHandshakeRequest(q))
			if err != nil || q2.Version != q.Version || q2.MaxMsgSize != q.MaxMsgSize || q2.DID != q.DID || !bytes.Equal(q2.Token, q.Token) {
				t.Fatalf("request %+v re-decoded as %+v (%v)", q, q2, err)
			}
		}
		s, err := DecodeHandshakeResponse(data)
		check(err)
		if err == nil {
			s2, err := DecodeHandshakeResponse(EncodeHandshakeResponse(s))
			if err != nil || s2.Version != s.Version || s2.Accepted != s.Accepted || s2.MaxMsgSize != s.MaxMsgSize || (s.Error == nil) != (s2.Error == nil) {
				t.Fatalf("response %+v re-decoded as %+v (%v)", s, s2, err)
			}
		}
		_, err = DecodeErrorFrame(data)
		check(err)
	})
}

// FuzzTopBytesRoutesLikeTheStrictReader: the client's light route reader
// never panics, and on every message the strict reader accepts it finds
// the same id and reply_to (a reply is never routed to another request
// than the one the verified message answers).
func FuzzTopBytesRoutesLikeTheStrictReader(f *testing.F) {
	id, rt := newID(), newID()
	for _, m := range []map[string]any{
		{"id": id},
		{"id": id, "reply_to": rt},
		{"v": 1, "id": id, "typ": 16, "body": map[string]any{"reply_to": newID(), "x": []any{1, "a", map[string]any{}}}, "reply_to": rt},
		{"id": "text", "reply_to": 7},
		{"body": map[string]any{"id": id}},
	} {
		b, err := amp.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(unhex(f, "a2 62 6964 50 00000000000000000000000000000001 62 6964 41 00"))
	f.Add(unhex(f, "a1 62 6964 5a ffffffff"))
	f.Add([]byte{0xbf, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		gotID, gotRT := topBytes(data, "id"), topBytes(data, "reply_to")
		wantID, wantRT, err := amp.Limits{}.EnvelopeIDs(data)
		if err != nil {
			return
		}
		if !bytes.Equal(gotID, wantID) || !bytes.Equal(gotRT, wantRT) {
			t.Fatalf("route (%x, %x), strict reader (%x, %x)", gotID, gotRT, wantID, wantRT)
		}
	})
}
