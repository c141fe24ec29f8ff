package amp

import (
	"crypto/sha256"
	"crypto/subtle"
	"strconv"
	"strings"

	"github.com/fxamacker/cbor/v2"
)

// Typed bodies of the core message types (RFC 001 §4.4). Each Decode*
// function checks the CBOR, the required fields and their types; a body of
// the wrong shape is 1001 invalid_message. Text-keyed fields the CDDL does
// not define are tolerated and ignored (forward compatibility); a key that is
// not a text string is refused, as no core body has one.

// decodeBody checks that body is a map with text keys holding every required
// key, then decodes it into v.
func decodeBody(body []byte, what string, v any, required ...string) error {
	if _, err := (Limits{}).Canonical(body); err != nil {
		return err
	}
	keys, _, err := mapEntries(body, what+" body")
	if err != nil {
		return err
	}
	for _, r := range required {
		found := false
		for _, k := range keys {
			if k == r {
				found = true
				break
			}
		}
		if !found {
			return Named(CodeInvalidMessage, "missing_field", "%s body lacks required field %q", what, r)
		}
	}
	if err := decMode.Unmarshal(body, v); err != nil {
		return Named(CodeInvalidMessage, "wrong_shape", "%s body has a field of the wrong type", what).WithCause(err)
	}
	return nil
}

// AckBody is the ACK body (RFC 001 §4.4, §16.1).
type AckBody struct {
	AckSource      string  `cbor:"ack_source"` // "relay" or "recipient"
	ReceivedAt     uint64  `cbor:"received_at"`
	AckTarget      string  `cbor:"ack_target,omitempty"`
	StreamID       string  `cbor:"stream_id,omitempty"`
	ChunksReceived *uint64 `cbor:"chunks_received,omitempty"`
	Verified       *bool   `cbor:"verified,omitempty"`
}

// ACK sources.
const (
	AckFromRelay     = "relay"
	AckFromRecipient = "recipient"
)

// DecodeAck decodes an ACK body.
func DecodeAck(body []byte) (AckBody, error) {
	var b AckBody
	if err := decodeBody(body, "ack", &b, "ack_source", "received_at"); err != nil {
		return AckBody{}, err
	}
	if b.AckSource != AckFromRelay && b.AckSource != AckFromRecipient {
		return AckBody{}, Named(CodeInvalidMessage, "wrong_shape", "ack_source must be relay or recipient")
	}
	return b, nil
}

// CheckAck applies the ACK validation rules of RFC 001 §16.1 to an ACK that
// Receive has already authenticated (so `from` signed it): a recipient ACK
// must come from one of the original message's recipients, a relay ACK from
// one of trustedRelays (the relays the sender's or the recipient's DID
// document lists as AgentMessagingRelay services, DIDDocument.Relays, or
// that the operator configured: client.Outbox gathers them); an `ack_target`
// must be one of the original recipients. Violations are 1001.
func CheckAck(ack *Message, originalTo Recipients, trustedRelays []string) (AckBody, error) {
	if ack.Type != TypeAck {
		return AckBody{}, Named(CodeInvalidMessage, "wrong_type", "message is not an ack")
	}
	b, err := DecodeAck(ack.Body)
	if err != nil {
		return AckBody{}, err
	}
	switch b.AckSource {
	case AckFromRecipient:
		if !originalTo.Contains(ack.From) {
			return AckBody{}, Named(CodeInvalidMessage, "ack_not_from_recipient", "recipient ack is not from a recipient of the original message")
		}
	case AckFromRelay:
		trusted := false
		for _, r := range trustedRelays {
			if BareDID(r) == BareDID(ack.From) {
				trusted = true
				break
			}
		}
		if !trusted {
			return AckBody{}, Named(CodeInvalidMessage, "untrusted_relay_ack", "relay ack is not from a trusted relay")
		}
	}
	if b.AckTarget != "" && !originalTo.Contains(b.AckTarget) {
		return AckBody{}, Named(CodeInvalidMessage, "wrong_ack_target", "ack_target is not a recipient of the original message")
	}
	return b, nil
}

// ProcOKBody is the PROC_OK body.
type ProcOKBody struct {
	Details cbor.RawMessage `cbor:"details,omitempty"`
}

// ProcFailBody is the PROC_FAIL body.
type ProcFailBody struct {
	Error cbor.RawMessage `cbor:"error,omitempty"`
}

// DecodeProcOK decodes a PROC_OK body.
func DecodeProcOK(body []byte) (ProcOKBody, error) {
	var b ProcOKBody
	return b, decodeBody(body, "proc_ok", &b)
}

// DecodeProcFail decodes a PROC_FAIL body.
func DecodeProcFail(body []byte) (ProcFailBody, error) {
	var b ProcFailBody
	return b, decodeBody(body, "proc_fail", &b)
}

// ErrorBody is the ERROR body (RFC 001 §15.1).
type ErrorBody struct {
	Code       Code            `cbor:"code"`
	Category   string          `cbor:"category"`
	Message    string          `cbor:"message"`
	Details    cbor.RawMessage `cbor:"details,omitempty"`
	Retry      *bool           `cbor:"retry,omitempty"`
	BatchIndex *uint64         `cbor:"batch_index,omitempty"`
}

// DecodeError decodes an ERROR body.
func DecodeError(body []byte) (ErrorBody, error) {
	var b ErrorBody
	if err := decodeBody(body, "error", &b, "code", "category", "message"); err != nil {
		return ErrorBody{}, err
	}
	return b, nil
}

// ErrorBodyOf returns the ERROR body for err: its code (5001 for an error
// that carries none), the code's category and retry flag, the safe message
// (SafeMessage: escaped and bounded, a peer's message handed on included,
// docs/SPEC-DECISIONS.md TRANSPORT-23) and the details (SafeDetails: at
// most MaxErrorDetails bytes nested at most MaxErrorDetailsDepth deep,
// else dropped whole, a peer's handed on included, TRANSPORT-24).
// Nothing of the cause is included.
func ErrorBodyOf(err error) ErrorBody {
	e := AsError(err)
	code := e.Code
	if code == 0 {
		code = CodeInternalError
	}
	retry := code.Retryable() && !e.Final
	return ErrorBody{Code: code, Category: code.Category(), Message: SafeMessage(e), Details: SafeDetails(e), Retry: &retry}
}

// AsError returns the body as an *Error (for a client that received it).
func (b ErrorBody) AsError() *Error {
	e := &Error{Code: b.Code, Name: ErrName(b.Code.SnakeName()), Message: b.Message}
	if len(b.Details) > 0 {
		e.Details = b.Details
	}
	return e
}

// HelloBody is the HELLO body (RFC 001 §13.3).
type HelloBody struct {
	Versions   []string   `cbor:"versions"`
	Extensions []string   `cbor:"extensions,omitempty"`
	AgentInfo  *AgentInfo `cbor:"agent_info,omitempty"`
}

// AgentInfo describes the agent software in a HELLO.
type AgentInfo struct {
	Name           string `cbor:"name"`
	Implementation string `cbor:"implementation,omitempty"`
}

// DecodeHello decodes a HELLO body: versions must be a non-empty array of
// strings.
func DecodeHello(body []byte) (HelloBody, error) {
	var b HelloBody
	if err := decodeBody(body, "hello", &b, "versions"); err != nil {
		return HelloBody{}, err
	}
	if len(b.Versions) == 0 {
		return HelloBody{}, Named(CodeInvalidMessage, "wrong_shape", "hello versions must not be empty")
	}
	if b.AgentInfo != nil && b.AgentInfo.Name == "" {
		return HelloBody{}, Named(CodeInvalidMessage, "missing_field", "hello agent_info lacks its name")
	}
	return b, nil
}

// HelloAckBody is the HELLO_ACK body.
type HelloAckBody struct {
	Selected string `cbor:"selected"`
}

// DecodeHelloAck decodes a HELLO_ACK body.
func DecodeHelloAck(body []byte) (HelloAckBody, error) {
	var b HelloAckBody
	return b, decodeBody(body, "hello_ack", &b, "selected")
}

// HelloRejectBody is the HELLO_REJECT body.
type HelloRejectBody struct {
	Reason string `cbor:"reason,omitempty"`
}

// MajorVersion returns major(x.y.z) of a HELLO version string: the decimal
// integer before the first dot (RFC 001 §13.1). "1.0" and "1.2.3" are major
// 1; a string that does not start with digits then a dot (or end) is not a
// version.
func MajorVersion(v string) (uint64, bool) {
	head := v
	if i := strings.IndexByte(v, '.'); i >= 0 {
		head = v[:i]
	}
	if head == "" || len(head) > 1 && head[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(head, 10, 64)
	return n, err == nil
}

// SelectVersion answers a HELLO (RFC 001 §13): the first of the initiator's
// versions (listed preferred first) whose major version is in supported. ok
// is false when none is, and the answer is HELLO_REJECT.
func SelectVersion(h HelloBody, supported []uint64) (selected string, ok bool) {
	for _, v := range h.Versions {
		major, valid := MajorVersion(v)
		if !valid {
			continue
		}
		for _, s := range supported {
			if s == major {
				return v, true
			}
		}
	}
	return "", false
}

// DocSendBody is the DOC_SEND body: a small inline document.
type DocSendBody struct {
	ContentType string `cbor:"content_type"`
	Filename    string `cbor:"filename"`
	Size        uint64 `cbor:"size"`
	Hash        []byte `cbor:"hash"`
	Data        []byte `cbor:"data"`
}

// DecodeDocSend decodes a DOC_SEND body and checks that size and hash (SHA-256,
// as for streams, §6.2) match the data.
func DecodeDocSend(body []byte) (DocSendBody, error) {
	var b DocSendBody
	if err := decodeBody(body, "doc_send", &b, "content_type", "filename", "size", "hash", "data"); err != nil {
		return DocSendBody{}, err
	}
	if uint64(len(b.Data)) != b.Size {
		return DocSendBody{}, Named(CodeInvalidMessage, "size_mismatch", "doc_send size does not match its data")
	}
	sum := sha256.Sum256(b.Data)
	if subtle.ConstantTimeCompare(sum[:], b.Hash) != 1 {
		return DocSendBody{}, Named(CodeInvalidMessage, "hash_mismatch", "doc_send hash does not match its data")
	}
	return b, nil
}

// DocRequestBody is the DOC_REQUEST body.
type DocRequestBody struct {
	DocID  string `cbor:"doc_id,omitempty"`
	Hash   []byte `cbor:"hash,omitempty"`
	Accept string `cbor:"accept,omitempty"`
}

// DecodeDocRequest decodes a DOC_REQUEST body, which must name doc_id or hash.
func DecodeDocRequest(body []byte) (DocRequestBody, error) {
	var b DocRequestBody
	if err := decodeBody(body, "doc_request", &b); err != nil {
		return DocRequestBody{}, err
	}
	if b.DocID == "" && len(b.Hash) == 0 {
		return DocRequestBody{}, Named(CodeInvalidMessage, "missing_field", "doc_request must include doc_id or hash")
	}
	return b, nil
}
