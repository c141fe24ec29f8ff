package amp

// ValidErrName reports whether s can be printed as an error name that
// came from elsewhere (a peer's answer, a file another process wrote):
// 1 to 64 bytes of a-z, 0-9 and _. A name that fails is never echoed; the
// caller says instead that the name was unusable.
func ValidErrName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < 'a' || s[i] > 'z') && s[i] != '_' && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// SafeName returns the name of err that may be signed into an answer
// or printed as a name: its name (Error's Name, else its code's snake
// name) when that passes ValidErrName, else its code's snake name
// ("bad_request", "code_4999"), which always does, or "error" for an
// error that carries no code; "" for nil. An *Error whose name came
// from elsewhere (a provider's CAP_RESULT error, capability.ResultError,
// or a name a handler copied from one) may hold any bytes of any length:
// an agent that hands that error on (capability.NewErrorResult) or a
// bridge that prints it (mcpbridge) takes this name instead, the same
// rule the client applies to a provider's name before an embedder sees
// it (docs/SPEC-DECISIONS.md TRANSPORT-18, TRANSPORT-24). The module's
// own names all pass and come out unchanged; an error that is not an
// *Error is "internal_error", as AsError makes it.
func SafeName(err error) ErrName {
	if err == nil {
		return ""
	}
	e := AsError(err)
	if n := e.name(); ValidErrName(string(n)) {
		return n
	}
	if e.Code != 0 {
		return ErrName(e.Code.SnakeName())
	}
	return "error"
}
