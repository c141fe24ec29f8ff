package ocitransport

import (
	"github.com/ampbundle/ampbundle/amp"
)

// The Options fields an OptionHint names.
const (
	OptionPlainHTTP          = "PlainHTTP"
	OptionPlainHTTPHosts     = "PlainHTTPHosts"
	OptionAllowRedirectHosts = "AllowRedirectHosts"
	OptionAllowAuthHosts     = "AllowAuthHosts"
	OptionMaxLayerSize       = "MaxLayerSize"
)

// OptionHint is the cause of a refusal that a field of Options governs:
// a host not named in PlainHTTPHosts, AllowRedirectHosts or
// AllowAuthHosts, a registry answering plain HTTP without PlainHTTP, a
// MaxLayerSize that cuts too many layers. The refusal's message names
// the field (the library's callers set Options, not the flags of
// ampbundle's CLI); a caller whose users set the field through a
// setting of their own (ampbundle's flags) builds its message from
// Refusal and names that setting (docs/SPEC-DECISIONS.md OCI-25).
type OptionHint struct {
	// Field is the Options field (OptionPlainHTTP, …).
	Field string
	// Host is the host refused (host, or host:port for the registry
	// itself) where it is known (letters, digits and ".-:[]" only, else
	// "(unprintable)"), else "".
	Host string
	// Refusal is the message without the remedy that names Field.
	Refusal string
}

// Error says the refusal is the caller's options', without repeating
// the field the message names.
func (h *OptionHint) Error() string { return "refused by the caller's options" }

// optionRefusal is the refusal name of h: its message is h.Refusal and
// the remedy naming h's Options field; h is its cause.
func optionRefusal(name amp.ErrName, h *OptionHint) *amp.Error {
	field := "Options." + h.Field
	var remedy string
	switch h.Field {
	case OptionPlainHTTP:
		remedy = "; for a loopback registry set " + field
	case OptionPlainHTTPHosts:
		remedy = " (name the host in " + field + ")"
	case OptionMaxLayerSize:
		remedy = " (a larger " + field + " cuts fewer)"
	default: // the allowed hosts
		remedy = " (allow the host in " + field + ")"
	}
	return fail(name, "%s", h.Refusal+remedy).WithCause(h)
}
