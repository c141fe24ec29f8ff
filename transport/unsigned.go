package transport

import (
	"fmt"
	"strings"
)

// ErrUnsignedRefusal names (as an amp.ErrName: an untyped constant, so
// that this package needs no amp) a refusal that reached a client without
// a signed AMP message: the unsigned error body of an HTTP 400, 413, ... or
// an AMPS/TCP ERROR frame (docs/FORMAT.md, "Transport error body"). Anyone
// on the path could have written it, so it says why the transport
// refused, never what the peer decided: the bindings give it their own
// code (what the HTTP status, or a frame's retry flag, means for a
// delivery), never the code the body claims, which they keep only in its
// UnsignedRefusal details (docs/SPEC-DECISIONS.md TRANSPORT-8).
const ErrUnsignedRefusal = "unsigned_refusal"

// MaxUnsignedMessage bounds the bytes of an unsigned refusal's message
// kept in its details.
const MaxUnsignedMessage = 256

// UnsignedRefusal is the Details of an ErrUnsignedRefusal error: what the
// unsigned body claimed, not verified. The body's own details are dropped.
type UnsignedRefusal struct {
	// ClaimedCode is the code the body names; it steers nothing.
	ClaimedCode uint16 `json:"claimed_code"`
	// ClaimedMessage is the body's message, cut to MaxUnsignedMessage
	// bytes of valid UTF-8.
	ClaimedMessage string `json:"claimed_message"`
}

// NewUnsignedRefusal bounds what an unsigned body claims (its code and
// message) for the details of an ErrUnsignedRefusal error.
func NewUnsignedRefusal(code uint16, message string) UnsignedRefusal {
	if len(message) > MaxUnsignedMessage {
		message = message[:MaxUnsignedMessage]
	}
	return UnsignedRefusal{ClaimedCode: code, ClaimedMessage: strings.ToValidUTF8(message, "\uFFFD")}
}

// Message is the error message of the refusal: that it is unsigned, and
// what it claims (the message %q-quoted).
func (u UnsignedRefusal) Message() string {
	return fmt.Sprintf("unsigned refusal, not verified (whoever answered may not be the agent): it claims %d %q", u.ClaimedCode, u.ClaimedMessage)
}
