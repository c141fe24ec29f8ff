package ampstcp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readOne(data []byte, max int) (Frame, error) {
	return ReadFrame(bufio.NewReader(bytes.NewReader(data)), max)
}

func TestFrameParserRefusesHostileLengths(t *testing.T) {
	for _, c := range []struct {
		name    string
		hex     string
		max     int
		typ     byte
		payload string
		err     error
	}{
		{name: "message frame", hex: "00000004 01 a0 0102", max: 16, typ: FrameMessage, payload: "a00102"},
		{name: "ping with empty payload", hex: "00000001 03", max: 16, typ: FramePing},
		{name: "zero length smuggles a frame without a type", hex: "00000000 01", max: 16, err: ErrEmptyFrame},
		{name: "length over the message limit", hex: "00000012 01", max: 16, err: ErrFrameTooLarge},
		{name: "4 GiB length claimed", hex: "ffffffff 01", max: 16 << 20, err: ErrFrameTooLarge},
		{name: "ping payload over its cap", hex: "00000102 03", max: 16 << 20, err: ErrFrameTooLarge},
		{name: "handshake payload over its cap", hex: "00010002 02", max: 16 << 20, err: ErrFrameTooLarge},
		{name: "unknown frame type", hex: "00000001 07", max: 16, err: ErrUnknownFrame},
		{name: "length backed by nothing", hex: "00100000 01 00", max: 16 << 20, err: io.ErrUnexpectedEOF},
		{name: "ends inside the length", hex: "0000", max: 16, err: io.ErrUnexpectedEOF},
		{name: "nothing at all", hex: "", max: 16, err: io.EOF},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := readOne(unhex(t, c.hex), c.max)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("error = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Type != c.typ || hex.EncodeToString(f.Payload) != c.payload {
				t.Fatalf("frame = %x %x", f.Type, f.Payload)
			}
			if got := AppendFrame(nil, f.Type, f.Payload); !bytes.Equal(got, unhex(t, c.hex)) {
				t.Fatalf("AppendFrame = %x", got)
			}
		})
	}
}

func TestHandshakeDecodingRefusesMalformedPayloads(t *testing.T) {
	good := EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20, DID: "did:key:z6Mk"})
	q, err := DecodeHandshakeRequest(good)
	if err != nil || q.Version != 1 || q.MaxMsgSize != 1<<20 || q.DID != "did:key:z6Mk" {
		t.Fatalf("round trip: %+v %v", q, err)
	}
	for _, c := range []struct {
		name string
		hex  string
	}{
		{"missing max_msg_size", "a1 6776657273696f6e 01"},
		{"missing version", "a1 6c6d61785f6d73675f73697a65 1a00100000"},
		{"version of the wrong type", "a2 6776657273696f6e 6131 6c6d61785f6d73675f73697a65 1a00100000"},
		{"zero max_msg_size", "a2 6776657273696f6e 01 6c6d61785f6d73675f73697a65 00"},
		{"duplicate version key", "a3 6776657273696f6e 01 6776657273696f6e 02 6c6d61785f6d73675f73697a65 1a00100000"},
		{"indefinite-length map", "bf 6776657273696f6e 01 6c6d61785f6d73675f73697a65 1a00100000 ff"},
		{"extensions not a map", "a3 6776657273696f6e 01 6a657874656e73696f6e73 01 6c6d61785f6d73675f73697a65 1a00100000"},
		{"not a map", "82 01 02"},
		{"trailing bytes", "a2 6776657273696f6e 01 6c6d61785f6d73675f73697a65 1a00100000 00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := DecodeHandshakeRequest(unhex(t, c.hex)); !errors.Is(err, ErrBadHandshake) {
				t.Fatalf("error = %v, want %s", err, ErrBadHandshake)
			}
		})
	}
	eb := amp.ErrorBodyOf(amp.NewError(amp.CodeUnsupportedVersion, "no"))
	r, err := DecodeHandshakeResponse(EncodeHandshakeResponse(HandshakeResponse{Version: 1, MaxMsgSize: 5, Error: &eb}))
	if err != nil || r.Accepted || r.Error == nil || r.Error.Code != amp.CodeUnsupportedVersion {
		t.Fatalf("refusal round trip: %+v %v", r, err)
	}
	if _, err := DecodeHandshakeResponse(unhex(t, "a2 6776657273696f6e 01 6c6d61785f6d73675f73697a65 1a00100000")); !errors.Is(err, ErrBadHandshake) {
		t.Fatalf("response without accepted: %v", err)
	}
}

func TestErrorFrameCarriesOnlyTheSafeMessage(t *testing.T) {
	id := bytes.Repeat([]byte{7}, 16)
	cause := errors.New("secret path /etc/shadow")
	payload := EncodeErrorFrame(amp.Wrap(amp.CodeInvalidMessage, cause, "message is malformed"), id)
	if bytes.Contains(payload, []byte("shadow")) {
		t.Fatal("the cause leaked into the error frame")
	}
	ef, err := DecodeErrorFrame(payload)
	if err != nil || ef.Error.Code != amp.CodeInvalidMessage || !bytes.Equal(ef.MessageID, id) {
		t.Fatalf("decoded %+v %v", ef, err)
	}
	bad, _ := amp.Marshal(map[string]any{"error": map[string]any{"code": 1001}, "message_id": []byte{1}})
	if _, err := DecodeErrorFrame(bad); !errors.Is(err, ErrProtocol) {
		t.Fatalf("short message_id, no category: %v", err)
	}
}
