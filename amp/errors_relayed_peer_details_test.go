package amp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// nestedArrays is n arrays, each the only element of the one around it,
// around the integer 0: CBOR nested n deep.
func nestedArrays(n int) cbor.RawMessage {
	return cbor.RawMessage(append(bytes.Repeat([]byte{0x81}, n), 0x00))
}

// byteString is a CBOR byte string whose whole encoding is n bytes
// (n > 258, so that its head is three or five bytes).
func byteString(n int) cbor.RawMessage {
	if n-3 <= 0xffff {
		return cbor.RawMessage(append([]byte{0x59, byte((n - 3) >> 8), byte(n - 3)}, make([]byte, n-3)...))
	}
	k := n - 5
	return cbor.RawMessage(append([]byte{0x5a, byte(k >> 24), byte(k >> 16), byte(k >> 8), byte(k)}, make([]byte, k)...))
}

// TestRelayedPeerErrorDetailsAreNeverResignedUnbounded: a handler that
// calls another agent and returns the error it got (a signed ERROR,
// ErrorBody.AsError) has its agent sign an ERROR (ErrorBodyOf) whose
// details were the peer's raw CBOR as sent: any size the peer's message
// limits let through (megabytes) and any nesting its decoder took, signed
// as the agent's own answer and handed on again at every hop. They are
// now re-signed only when well-formed, at most MaxErrorDetails bytes and
// nested at most MaxErrorDetailsDepth deep, else dropped whole; details
// within the bounds are kept, in deterministic form, and the next hop
// signs the same bytes (docs/SPEC-DECISIONS.md TRANSPORT-24).
func TestRelayedPeerErrorDetailsAreNeverResignedUnbounded(t *testing.T) {
	small, err := Marshal(map[string]any{"reason": "quota", "retry_after": 30})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		threat  string
		details cbor.RawMessage
		kept    bool
		// decoded: the details reach the handler in a peer's ERROR
		// (DecodeError); else the handler set the field itself.
		decoded bool
	}{
		{"details of a few bytes", small, true, true},
		{"details of exactly the bound", byteString(MaxErrorDetails), true, true},
		{"details one byte over the bound", byteString(MaxErrorDetails + 1), false, true},
		{"a megabyte of details", byteString(1 << 20), false, true},
		{"details nested as deep as the bound", nestedArrays(MaxErrorDetailsDepth), true, true},
		{"details nested one deeper than the bound", nestedArrays(MaxErrorDetailsDepth + 1), false, true},
		{"details nested as deep as a peer's message may", nestedArrays(DefaultMaxDepth - 2), false, true},
		{"details that are not one cbor item", cbor.RawMessage{0x82, 0x00}, false, false},
	} {
		t.Run(c.threat, func(t *testing.T) {
			peer := ErrorBody{Code: CodeUnavailable, Category: "server", Message: "busy", Details: c.details}.AsError()
			if c.decoded {
				wire, err := Marshal(ErrorBody{Code: CodeUnavailable, Category: "server", Message: "busy", Details: c.details})
				if err != nil {
					t.Fatal(err)
				}
				got, err := DecodeError(wire)
				if err != nil {
					t.Fatal(err)
				}
				peer = got.AsError()
			}
			resigned := ErrorBodyOf(peer)
			if !c.kept {
				if resigned.Details != nil {
					t.Fatalf("the re-signed ERROR carries %d bytes of the peer's details; want them dropped", len(resigned.Details))
				}
				return
			}
			if !bytes.Equal(resigned.Details, c.details) {
				t.Fatalf("the re-signed ERROR's details = %x, want the peer's %x", resigned.Details, c.details)
			}
			// The next agent that hands it on signs the same bytes.
			if next := ErrorBodyOf(resigned.AsError()); !bytes.Equal(next.Details, resigned.Details) {
				t.Fatalf("the next hop re-signs %x, want %x", next.Details, resigned.Details)
			}
		})
	}
}

// TestOwnErrorDetailsAreStillSigned: the bound on details is for every
// error an agent signs, and the module's own details (Go values) fit it:
// they are still sent, encoded as before; a Go value over it is dropped
// like a peer's.
func TestOwnErrorDetailsAreStillSigned(t *testing.T) {
	own := Named(CodeSchemaViolation, "schema_violation", "value does not match the schema (1 violations)").
		WithDetails([]map[string]string{{"instance_location": "/" + strings.Repeat("a", 511), "keyword": "additionalProperties"}})
	want, err := Marshal(own.Details)
	if err != nil {
		t.Fatal(err)
	}
	if got := ErrorBodyOf(own).Details; !bytes.Equal(got, want) {
		t.Fatalf("own details signed as %x, want %x", got, want)
	}
	big := NewError(CodeBadRequest, "too much").WithDetails(map[string]string{"pad": strings.Repeat("a", MaxErrorDetails)})
	if got := ErrorBodyOf(big).Details; got != nil {
		t.Fatalf("details of a Go value over the bound signed (%d bytes)", len(got))
	}
}

// TestPeerErrorNameIsNeverTakenAsANameWhenItIsNotOne: SafeName is the one
// rule for a name an agent signs or a bridge prints: an error's name when
// ValidErrName passes it, else its code's; a name a handler copied from a
// provider (terminal escapes, a forged line, 10 KB) never comes out.
func TestPeerErrorNameIsNeverTakenAsANameWhenItIsNotOne(t *testing.T) {
	for _, c := range []struct {
		threat string
		err    error
		want   ErrName
	}{
		{"a valid name", Named(CodeInternalError, "handler_failed", "x"), "handler_failed"},
		{"no name", &Error{Code: CodeTimeout}, "timeout"},
		{"terminal escape", &Error{Code: CodeInternalError, Name: "x\x1b[2J"}, "internal_error"},
		{"forged line", &Error{Code: CodeBadRequest, Name: "a\nlevel=ERROR"}, "bad_request"},
		{"10 KB", &Error{Code: 4999, Name: ErrName(strings.Repeat("a", 10<<10))}, "code_4999"},
		{"no code", &Error{Name: "Bad Name"}, "error"},
		{"not an amp error", strings.NewReader("").UnreadByte(), "internal_error"},
		{"nil", nil, ""},
	} {
		if got := SafeName(c.err); got != c.want {
			t.Errorf("%s: SafeName = %q, want %q", c.threat, got, c.want)
		}
	}
}
