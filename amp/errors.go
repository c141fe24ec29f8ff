package amp

import (
	"errors"
	"fmt"
	"strings"
)

// Code is an AMP error code (RFC 001 §15.3). The zero Code means "no AMP
// code applies"; it is used by local errors (for example a bundle that fails
// to verify on an operator's machine) that never travel on the wire.
//
// A Code is itself an error so that it can be used as an immutable target of
// errors.Is:
//
//	if errors.Is(err, amp.CodeUnavailable) { ... }
type Code uint16

// Error codes of RFC 001 §15.3.
const (
	CodeInvalidMessage     Code = 1001
	CodeInvalidSignature   Code = 1002
	CodeInvalidTimestamp   Code = 1003
	CodeUnsupportedVersion Code = 1004
	CodeUnknownType        Code = 1005

	CodeRecipientNotFound   Code = 2001
	CodeEndpointUnreachable Code = 2002
	CodeRelayRejected       Code = 2003
	CodeTTLExpired          Code = 2004

	CodeUnauthorized      Code = 3001
	CodeContactRequired   Code = 3002
	CodeContactDenied     Code = 3003
	CodeDelegationInvalid Code = 3004
	CodeRateLimited       Code = 3005

	CodeBadRequest         Code = 4001
	CodeCapabilityNotFound Code = 4002
	CodeVersionMismatch    Code = 4003
	CodeSchemaViolation    Code = 4004

	CodeInternalError Code = 5001
	CodeUnavailable   Code = 5002
	CodeTimeout       Code = 5003
	CodeOverloaded    Code = 5004
)

// codeInfo is the registry row of one standard code.
type codeInfo struct {
	name  string
	retry bool
}

// lookup returns the registry row of c (RFC 001 §15.3, verbatim).
func lookup(c Code) (codeInfo, bool) {
	switch c {
	case CodeInvalidMessage:
		return codeInfo{"INVALID_MESSAGE", false}, true
	case CodeInvalidSignature:
		return codeInfo{"INVALID_SIGNATURE", false}, true
	case CodeInvalidTimestamp:
		return codeInfo{"INVALID_TIMESTAMP", false}, true
	case CodeUnsupportedVersion:
		return codeInfo{"UNSUPPORTED_VERSION", false}, true
	case CodeUnknownType:
		return codeInfo{"UNKNOWN_TYPE", false}, true
	case CodeRecipientNotFound:
		return codeInfo{"RECIPIENT_NOT_FOUND", true}, true
	case CodeEndpointUnreachable:
		return codeInfo{"ENDPOINT_UNREACHABLE", true}, true
	case CodeRelayRejected:
		return codeInfo{"RELAY_REJECTED", true}, true
	case CodeTTLExpired:
		return codeInfo{"TTL_EXPIRED", false}, true
	case CodeUnauthorized:
		return codeInfo{"UNAUTHORIZED", false}, true
	case CodeContactRequired:
		return codeInfo{"CONTACT_REQUIRED", false}, true
	case CodeContactDenied:
		return codeInfo{"CONTACT_DENIED", false}, true
	case CodeDelegationInvalid:
		return codeInfo{"DELEGATION_INVALID", false}, true
	case CodeRateLimited:
		return codeInfo{"RATE_LIMITED", true}, true
	case CodeBadRequest:
		return codeInfo{"BAD_REQUEST", false}, true
	case CodeCapabilityNotFound:
		return codeInfo{"CAPABILITY_NOT_FOUND", false}, true
	case CodeVersionMismatch:
		return codeInfo{"VERSION_MISMATCH", false}, true
	case CodeSchemaViolation:
		return codeInfo{"SCHEMA_VIOLATION", false}, true
	case CodeInternalError:
		return codeInfo{"INTERNAL_ERROR", true}, true
	case CodeUnavailable:
		return codeInfo{"UNAVAILABLE", true}, true
	case CodeTimeout:
		return codeInfo{"TIMEOUT", true}, true
	case CodeOverloaded:
		return codeInfo{"OVERLOADED", true}, true
	}
	return codeInfo{}, false
}

// Codes returns every standard code of RFC 001 §15.3 in ascending order.
func Codes() []Code {
	var out []Code
	for c := Code(1000); c < 6000; c++ {
		if _, ok := lookup(c); ok {
			out = append(out, c)
		}
	}
	return out
}

// Known reports whether c is one of the standard codes of RFC 001 §15.3.
func (c Code) Known() bool {
	_, ok := lookup(c)
	return ok
}

// Name returns the RFC name of c ("INVALID_MESSAGE"), or "CODE_<n>" for a code
// that is not in the standard registry (vendor codes x900-x999, for example).
func (c Code) Name() string {
	if info, ok := lookup(c); ok {
		return info.name
	}
	return fmt.Sprintf("CODE_%d", uint16(c))
}

// Category returns the category of c by its range (RFC 001 §15.2):
// "protocol", "routing", "security", "client" or "server". It returns "" for
// a code outside 1000-5999.
func (c Code) Category() string {
	switch {
	case c >= 1000 && c < 2000:
		return "protocol"
	case c >= 2000 && c < 3000:
		return "routing"
	case c >= 3000 && c < 4000:
		return "security"
	case c >= 4000 && c < 5000:
		return "client"
	case c >= 5000 && c < 6000:
		return "server"
	}
	return ""
}

// Retryable reports the Retry column of RFC 001 §15.3. Codes outside the
// standard registry are retryable only in the 5xxx (server) range.
func (c Code) Retryable() bool {
	if info, ok := lookup(c); ok {
		return info.retry
	}
	return c >= 5000 && c < 6000
}

// SnakeName returns the stable snake_case form of the code name
// ("invalid_message"), the form used by the CLI contract.
func (c Code) SnakeName() string { return strings.ToLower(c.Name()) }

// Error makes a Code usable as an errors.Is target.
func (c Code) Error() string { return c.String() }

// String returns "1001 INVALID_MESSAGE".
func (c Code) String() string { return fmt.Sprintf("%d %s", uint16(c), c.Name()) }

// ErrName is the stable snake_case name of an error condition, for example
// "hash_mismatch". Like Code it is an immutable errors.Is target:
//
//	if errors.Is(err, bundle.ErrHashMismatch) { ... }
type ErrName string

// Error returns the name itself.
func (n ErrName) Error() string { return string(n) }

// Error is the one error type of this project. It carries the
// AMP code when one applies, a stable snake_case name, a message that is safe
// to show to a peer (it never echoes raw input), optional structured details,
// and the underlying cause. An Error built from a peer's answer (a signed
// ERROR, ErrorBody.AsError; a CAP_RESULT's error) holds that peer's
// message as sent: its Error method prints it escaped and bounded, the
// field keeps it whole.
//
// errors.As(err, &e) works across packages; errors.Is(err, code) and
// errors.Is(err, name) compare the code and the name.
type Error struct {
	Code    Code    // AMP code, or 0 when none applies
	Name    ErrName // stable snake_case name; defaults to Code.SnakeName()
	Message string  // safe, lowercase, no raw input (a peer's as sent, in a peer's answer)
	Details any     // optional structured details, safe to send to a peer
	Err     error   // cause, for logs; never sent to a peer
	// Final marks an error that a retry of the same message cannot
	// change, whatever its code's Retry column says (for example an
	// answer kept in a replay cache); ErrorBodyOf then sends retry false.
	Final bool
}

// NewError returns an *Error with the code's default name.
func NewError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Name: ErrName(code.SnakeName()), Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the code's default name and the given cause.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	e := NewError(code, format, args...)
	e.Err = cause
	return e
}

// Named returns an *Error with an explicit name.
func Named(code Code, name ErrName, format string, args ...any) *Error {
	return &Error{Code: code, Name: name, Message: fmt.Sprintf(format, args...)}
}

// WithCause sets the cause and returns e.
func (e *Error) WithCause(err error) *Error { e.Err = err; return e }

// WithDetails sets the details and returns e.
func (e *Error) WithDetails(d any) *Error { e.Details = d; return e }

// Error returns "<name> (<code>): <message>", followed by the cause when
// there is one. The name and the message are printed escaped and bounded
// (errorText: control, format and bidi characters and bytes that are not
// UTF-8 as visible escapes, at most MaxErrorText bytes of each, a cut
// marked): an error built from a peer's answer (ErrorBody.AsError,
// capability.ResultError.AsError) carries the peer's message as sent,
// which an embedder's log would otherwise take as it came, terminal
// escapes, forged log lines and 64 KiB of text included
// (docs/SPEC-DECISIONS.md TRANSPORT-21). The fields keep the text as sent,
// for a caller that reads it knowing whose it is. The cause prints itself:
// an *Error cause by this same rule.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(errorText(string(e.name())))
	if e.Code != 0 {
		fmt.Fprintf(&b, " (%d)", uint16(e.Code))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(errorText(e.Message))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) name() ErrName {
	if e.Name != "" {
		return e.Name
	}
	if e.Code != 0 {
		return ErrName(e.Code.SnakeName())
	}
	return "error"
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is this error's Code, this error's ErrName, or an
// *Error with the same code and (when the target has one) the same name.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Code:
		return e.Code != 0 && e.Code == t
	case ErrName:
		return e.name() == t
	case *Error:
		return e.Code == t.Code && (t.Name == "" || t.Name == e.name())
	}
	return false
}

// AsError returns err as an *Error. An error that is not an *Error (or does
// not wrap one) becomes 5001 internal_error with a generic message, so that
// nothing about its text reaches a peer. AsError(nil) returns nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(CodeInternalError, err, "internal error")
}

// CodeOf returns the AMP code carried by err, 0 if it carries none, and
// CodeInternalError for a non-nil error that is not an *Error.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	return AsError(err).Code
}

// NameOf returns the snake_case name carried by err ("internal_error" for an
// error that is not an *Error, "" for nil).
func NameOf(err error) ErrName {
	if err == nil {
		return ""
	}
	return AsError(err).name()
}

// SafeMessage returns the message of err that may be shown to a peer,
// written to a log or shown on a terminal: the Message of an *Error (its
// name, spaced, when it has none), or a generic text for anything else,
// escaped and bounded as Error prints it (errorText: at most MaxErrorText
// bytes, control, format and bidi characters and bytes that are not
// UTF-8 as visible escapes). An *Error built from a peer's answer
// (ErrorBody.AsError, capability.ResultError.AsError) holds the peer's
// message as sent; an agent whose handler hands that error on signs
// SafeMessage's text as its own answer's message (ErrorBodyOf,
// capability.NewErrorResult), which therefore never carries a peer's
// text raw, nor more than MaxErrorText bytes of it, and is escaped once
// however many agents hand it on (docs/SPEC-DECISIONS.md TRANSPORT-23).
// The module's own messages (printable ASCII within the bound, their
// input %q-quoted) come out unchanged.
func SafeMessage(err error) string {
	if err == nil {
		return ""
	}
	e := AsError(err)
	if e.Message != "" {
		return errorText(e.Message)
	}
	return errorText(strings.ReplaceAll(string(e.name()), "_", " "))
}
