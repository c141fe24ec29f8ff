package capability

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// providerFailure is the CAP_RESULT error a provider sent, decoded as a
// handler's client decodes it (DecodeResult), its name and details as
// the provider wrote them.
func providerFailure(t *testing.T, name string, details cbor.RawMessage) ResultError {
	t.Helper()
	b, err := Result{Status: StatusError, Error: &ResultError{Code: amp.CodeInternalError, Name: name, Message: "failed", Details: details}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	return *r.Error
}

// resign is what an agent whose handler hands err on signs: the
// CAP_RESULT NewErrorResult builds, encoded and decoded back as its
// caller reads it.
func resign(t *testing.T, err error) ResultError {
	t.Helper()
	b, encErr := NewErrorResult(err).Encode()
	if encErr != nil {
		t.Fatal(encErr)
	}
	r, decErr := DecodeResult(b)
	if decErr != nil {
		t.Fatal(decErr)
	}
	return *r.Error
}

// TestProvidersErrorNameIsNeverResignedRaw: a handler that invokes
// another agent and returns the error it got (ResultError.AsError, or an
// error it builds around the provider's name) had its agent sign the
// provider's name as sent as its own CAP_RESULT's error name
// (NewErrorResult took e.Name unchecked): terminal escapes, a forged log
// line or 10 KB of the provider's choosing, in an answer the agent's key
// vouches for and its caller's logs print first. The name is now signed
// only when amp.ValidErrName passes it, else the code's name takes its
// place; a valid name is kept (docs/SPEC-DECISIONS.md TRANSPORT-24).
func TestProvidersErrorNameIsNeverResignedRaw(t *testing.T) {
	for _, c := range []struct {
		threat, name, want string
	}{
		{"a valid name", "handler_failed", "handler_failed"},
		{"terminal escape", "x\x1b]0;owned\x07", "internal_error"},
		{"forged log line", "busy\nlevel=ERROR msg=root", "internal_error"},
		{"bidi override", "ok\u202eliaf", "internal_error"},
		{"10 KB", strings.Repeat("a", 10<<10), "internal_error"},
		{"upper case", "Handler_Failed", "internal_error"},
	} {
		t.Run(c.threat, func(t *testing.T) {
			re := providerFailure(t, c.name, nil)
			for how, err := range map[string]error{
				"handed on as decoded":             re.AsError(),
				"built around the provider's name": amp.Named(re.Code, amp.ErrName(re.Name), "the provider said: %s", re.Message),
			} {
				if got := resign(t, err).Name; got != c.want {
					t.Errorf("%s: the re-signed name = %q, want %q", how, got, c.want)
				}
			}
			if got := string(re.AsError().Name); got != c.want {
				t.Errorf("ResultError.AsError's name = %q, want %q", got, c.want)
			}
			if re.Name != c.name {
				t.Errorf("the ResultError lost the provider's name as sent: %q", re.Name)
			}
		})
	}
	// An error with no name still signs none.
	if got := resign(t, amp.Named(amp.CodeTimeout, "", "late")).Name; got != "" {
		t.Errorf("an error with no name was signed with %q", got)
	}
}

// TestProvidersErrorDetailsAreNeverResignedUnbounded: the same handler
// had its agent re-sign the provider's details, raw CBOR as sent,
// bounded only by the message limits (megabytes, nested as deep as the
// decoder took). They are now re-signed only when at most
// amp.MaxErrorDetails bytes nested at most amp.MaxErrorDetailsDepth deep,
// else dropped whole (docs/SPEC-DECISIONS.md TRANSPORT-24).
func TestProvidersErrorDetailsAreNeverResignedUnbounded(t *testing.T) {
	small, err := amp.Marshal(map[string]any{"reason": "quota"})
	if err != nil {
		t.Fatal(err)
	}
	big, err := amp.Marshal(bytes.Repeat([]byte{'a'}, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	deep := cbor.RawMessage(append(bytes.Repeat([]byte{0x81}, amp.MaxErrorDetailsDepth+1), 0x00))
	for _, c := range []struct {
		threat  string
		details cbor.RawMessage
		want    cbor.RawMessage
	}{
		{"details of a few bytes", small, small},
		{"a megabyte of details", big, nil},
		{"details nested past the bound", deep, nil},
	} {
		t.Run(c.threat, func(t *testing.T) {
			re := providerFailure(t, "handler_failed", c.details)
			if got := resign(t, re.AsError()).Details; !bytes.Equal(got, c.want) {
				t.Fatalf("the re-signed details are %d bytes, want %d", len(got), len(c.want))
			}
		})
	}
}
