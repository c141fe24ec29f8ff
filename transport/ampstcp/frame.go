package ampstcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// Frame types (docs/TRANSPORT.md §2).
const (
	FrameMessage   byte = 0x01 // one raw CBOR AMP message
	FrameHandshake byte = 0x02 // HANDSHAKE request or response
	FramePing      byte = 0x03 // PING: the peer echoes the payload in a PONG
	FramePong      byte = 0x04 // PONG
	FrameGoAway    byte = 0x05 // GOAWAY: no new messages on this connection
	FrameError     byte = 0x06 // ERROR: a refused message or a connection error
)

// Version is the version of the binding this package speaks.
const Version = 1

// Caps on the payloads of control frames.
const (
	// MaxControlPayload caps a HANDSHAKE, GOAWAY or ERROR payload.
	MaxControlPayload = 64 << 10
	// MaxPingPayload caps a PING or PONG payload.
	MaxPingPayload = 256
	// MinMessageSize is the least max_msg_size a peer may announce: every
	// conformant endpoint accepts 1 MiB.
	MinMessageSize = 1 << 20
	// frameHeader is the length prefix and the frame type.
	frameHeader = 5
)

// Error names of the binding (code 1001 unless said otherwise).
const (
	ErrEmptyFrame       amp.ErrName = "empty_frame"
	ErrFrameTooLarge    amp.ErrName = "frame_too_large"
	ErrUnknownFrame     amp.ErrName = "unknown_frame_type"
	ErrProtocol         amp.ErrName = "protocol_violation"
	ErrBadHandshake     amp.ErrName = "invalid_handshake"
	ErrHandshakeRefused amp.ErrName = "handshake_refused"
)

// Frame is one frame: its type and payload.
type Frame struct {
	Type    byte
	Payload []byte
}

// readChunk is the most ReadFrame allocates ahead of the bytes it has read.
const readChunk = 64 << 10

// ReadFrame reads one frame from r. The length (frame type + payload) must
// be at least 1 (ErrEmptyFrame) and at most maxLen (ErrFrameTooLarge);
// the payload of a control frame is further capped (MaxControlPayload,
// MaxPingPayload). Payload memory grows with the bytes that arrive, never
// with the length a peer claims. An unknown frame type is ErrUnknownFrame.
// io.EOF before the first byte is returned as is; inside the frame it is
// io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, maxLen int) (Frame, error) {
	typ, size, err := readFrameHeader(r, maxLen)
	if err != nil {
		return Frame{}, err
	}
	payload, err := readPayload(r, size)
	if err != nil {
		return Frame{}, err
	}
	return Frame{Type: typ, Payload: payload}, nil
}

// readFrameHeader reads the length and type of a frame and checks them as
// ReadFrame does; it returns the type and the payload size. The server
// charges an AMP_MESSAGE's size to its in-flight byte budget between this
// and readPayload, so that no payload byte is held before it fits.
func readFrameHeader(r *bufio.Reader, maxLen int) (byte, int, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:1]); err != nil {
		return 0, 0, err
	}
	if _, err := io.ReadFull(r, hdr[1:4]); err != nil {
		return 0, 0, unexpected(err)
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n == 0 {
		return 0, 0, amp.Named(amp.CodeInvalidMessage, ErrEmptyFrame, "frame length is 0 (it counts the frame type, so it is at least 1)")
	}
	if _, err := io.ReadFull(r, hdr[4:]); err != nil {
		return 0, 0, unexpected(err)
	}
	typ := hdr[4]
	limit := uint64(maxLen)
	switch typ {
	case FrameMessage:
	case FrameHandshake, FrameGoAway, FrameError:
		limit = MaxControlPayload + 1
	case FramePing, FramePong:
		limit = MaxPingPayload + 1
	default:
		return 0, 0, amp.Named(amp.CodeInvalidMessage, ErrUnknownFrame, "unknown frame type 0x%02x", typ)
	}
	if uint64(n) > limit {
		return 0, 0, amp.Named(amp.CodeInvalidMessage, ErrFrameTooLarge, "frame of %d bytes is over the %d-byte limit", n, limit)
	}
	return typ, int(n) - 1, nil
}

// readPayload reads size bytes, growing its buffer with the bytes that
// arrive (at most readChunk ahead of them).
func readPayload(r io.Reader, size int) ([]byte, error) {
	first := min(size, readChunk)
	buf := make([]byte, 0, first)
	for len(buf) < size {
		chunk := min(size-len(buf), readChunk)
		k := len(buf)
		buf = append(buf, make([]byte, chunk)...)
		if _, err := io.ReadFull(r, buf[k:]); err != nil {
			return nil, unexpected(err)
		}
	}
	return buf, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendFrame appends the frame (typ, payload) to dst.
func AppendFrame(dst []byte, typ byte, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)+1))
	dst = append(dst, typ)
	return append(dst, payload...)
}

// HandshakeRequest is the client's HANDSHAKE payload:
// {version: uint, max_msg_size: uint, ? did: text, ? token: bstr,
// ? extensions: map}.
type HandshakeRequest struct {
	// Version of the binding (1).
	Version uint64
	// MaxMsgSize is the largest AMP message the client accepts.
	MaxMsgSize uint64
	// DID optionally names the client (informational: every message is
	// authenticated by its own signature).
	DID string
	// Token is an optional opaque credential (unused by this agent).
	Token []byte
}

// HandshakeResponse is the server's HANDSHAKE payload:
// {version: uint, accepted: bool, max_msg_size: uint, ? error: error-body,
// ? extensions: map}.
type HandshakeResponse struct {
	Version    uint64
	Accepted   bool
	MaxMsgSize uint64
	// Error says why the handshake was refused (Accepted false).
	Error *amp.ErrorBody
}

type wireHandshakeRequest struct {
	Version    *uint64         `cbor:"version"`
	MaxMsgSize *uint64         `cbor:"max_msg_size"`
	DID        *string         `cbor:"did,omitempty"`
	Token      []byte          `cbor:"token,omitempty"`
	Extensions cbor.RawMessage `cbor:"extensions,omitempty"`
}

type wireHandshakeResponse struct {
	Version    *uint64         `cbor:"version"`
	Accepted   *bool           `cbor:"accepted"`
	MaxMsgSize *uint64         `cbor:"max_msg_size"`
	Error      cbor.RawMessage `cbor:"error,omitempty"`
	Extensions cbor.RawMessage `cbor:"extensions,omitempty"`
}

// controlLimits bounds the CBOR of control payloads.
func controlLimits() amp.Limits {
	return amp.Limits{MaxMessageSize: MaxControlPayload, MaxDepth: 8, MaxArrayLen: 256, MaxMapPairs: 256}
}

func badHandshake(format string, args ...any) *amp.Error {
	return amp.Named(amp.CodeInvalidMessage, ErrBadHandshake, format, args...)
}

// checkExtensions accepts an absent extensions field or a map.
func checkExtensions(raw cbor.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	h, err := amp.ReadHead(raw, 0)
	if err != nil || h.Major != amp.MajorMap {
		return badHandshake("handshake extensions must be a map")
	}
	return nil
}

// EncodeHandshakeRequest returns the deterministic CBOR of q.
func EncodeHandshakeRequest(q HandshakeRequest) []byte {
	w := wireHandshakeRequest{Version: &q.Version, MaxMsgSize: &q.MaxMsgSize, Token: q.Token}
	if q.DID != "" {
		w.DID = &q.DID
	}
	b, _ := amp.Marshal(w)
	return b
}

// DecodeHandshakeRequest decodes a HANDSHAKE request strictly: one accepted
// CBOR map (amp's reader: no duplicates, no indefinite lengths), version
// and max_msg_size unsigned integers, max_msg_size at least 1 (a request
// under MinMessageSize is honored: replies over it are refused), did a
// text, token a byte string, extensions a map. Unknown keys are ignored
// (extensions of later versions). Errors: ErrBadHandshake (1001).
func DecodeHandshakeRequest(payload []byte) (HandshakeRequest, error) {
	var w wireHandshakeRequest
	if err := controlLimits().Unmarshal(payload, &w); err != nil {
		return HandshakeRequest{}, badHandshake("handshake request is not a cbor map of the expected fields").WithCause(err)
	}
	if w.Version == nil || w.MaxMsgSize == nil {
		return HandshakeRequest{}, badHandshake("handshake request must carry version and max_msg_size")
	}
	if *w.MaxMsgSize == 0 {
		return HandshakeRequest{}, badHandshake("handshake max_msg_size must be at least 1")
	}
	if err := checkExtensions(w.Extensions); err != nil {
		return HandshakeRequest{}, err
	}
	q := HandshakeRequest{Version: *w.Version, MaxMsgSize: *w.MaxMsgSize, Token: w.Token}
	if w.DID != nil {
		q.DID = *w.DID
	}
	return q, nil
}

// EncodeHandshakeResponse returns the deterministic CBOR of s.
func EncodeHandshakeResponse(s HandshakeResponse) []byte {
	w := wireHandshakeResponse{Version: &s.Version, Accepted: &s.Accepted, MaxMsgSize: &s.MaxMsgSize}
	if s.Error != nil {
		w.Error, _ = amp.Marshal(s.Error)
	}
	b, _ := amp.Marshal(w)
	return b
}

// DecodeHandshakeResponse decodes a HANDSHAKE response with the rules of
// DecodeHandshakeRequest; error, when present, must be an RFC 001 error
// body.
func DecodeHandshakeResponse(payload []byte) (HandshakeResponse, error) {
	var w wireHandshakeResponse
	if err := controlLimits().Unmarshal(payload, &w); err != nil {
		return HandshakeResponse{}, badHandshake("handshake response is not a cbor map of the expected fields").WithCause(err)
	}
	if w.Version == nil || w.Accepted == nil || w.MaxMsgSize == nil {
		return HandshakeResponse{}, badHandshake("handshake response must carry version, accepted and max_msg_size")
	}
	if *w.Accepted && *w.MaxMsgSize == 0 {
		return HandshakeResponse{}, badHandshake("handshake max_msg_size must be at least 1")
	}
	if err := checkExtensions(w.Extensions); err != nil {
		return HandshakeResponse{}, err
	}
	s := HandshakeResponse{Version: *w.Version, Accepted: *w.Accepted, MaxMsgSize: *w.MaxMsgSize}
	if len(w.Error) > 0 {
		eb, err := amp.DecodeError(w.Error)
		if err != nil {
			return HandshakeResponse{}, badHandshake("handshake error is not an error body").WithCause(err)
		}
		s.Error = &eb
	}
	return s, nil
}

// ErrorFrame is the payload of an ERROR frame: {error: error-body,
// ? message_id: bstr}. message_id names the refused AMP message when its
// id could be read; without it the error concerns the connection, which
// the sender closes after the frame.
type ErrorFrame struct {
	Error     amp.ErrorBody
	MessageID []byte
}

type wireErrorFrame struct {
	Error     cbor.RawMessage `cbor:"error"`
	MessageID []byte          `cbor:"message_id,omitempty"`
}

// EncodeErrorFrame returns the ERROR payload for err (its safe message
// only, RFC 001 §15) about the message with id (nil for the connection).
func EncodeErrorFrame(err error, id []byte) []byte {
	eb, _ := amp.Marshal(amp.ErrorBodyOf(err))
	b, _ := amp.Marshal(wireErrorFrame{Error: eb, MessageID: id})
	return b
}

// DecodeErrorFrame decodes an ERROR payload strictly.
func DecodeErrorFrame(payload []byte) (ErrorFrame, error) {
	var w wireErrorFrame
	if err := controlLimits().Unmarshal(payload, &w); err != nil {
		return ErrorFrame{}, amp.Named(amp.CodeInvalidMessage, ErrProtocol, "error frame is not a cbor map of the expected fields").WithCause(err)
	}
	if len(w.Error) == 0 {
		return ErrorFrame{}, amp.Named(amp.CodeInvalidMessage, ErrProtocol, "error frame must carry an error body")
	}
	eb, err := amp.DecodeError(w.Error)
	if err != nil {
		return ErrorFrame{}, amp.Named(amp.CodeInvalidMessage, ErrProtocol, "error frame does not carry an error body").WithCause(err)
	}
	if w.MessageID != nil && len(w.MessageID) != 16 {
		return ErrorFrame{}, amp.Named(amp.CodeInvalidMessage, ErrProtocol, "error frame message_id must be 16 bytes")
	}
	return ErrorFrame{Error: eb, MessageID: w.MessageID}, nil
}

// isDeadline reports whether err is one of the server's own read
// deadlines that passed (os.ErrDeadlineExceeded). Not any error whose
// Timeout() is true: a read failing with ETIMEDOUT (TCP keepalive or
// retransmission giving up on a vanished peer) says so too, and that
// peer is gone (peerGone), not merely quiet.
func isDeadline(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
