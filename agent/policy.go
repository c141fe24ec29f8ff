package agent

import (
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// Policy decides who may use the agent (RFC 004 §7.2 step 2, the coarse
// check that needs no capability) and which capabilities a caller may use
// (step 4). Callers are bare DIDs, authenticated by their signature.
type Policy interface {
	AllowCaller(caller string) bool
	AllowCapability(caller, name string) bool
}

// SharedPrincipal is the principal of every caller a policy does not name
// (admitted by a "*" rule, or not admitted at all): they share one quota.
const SharedPrincipal = "*"

// Principals is implemented by a Policy that says which principal a caller
// is charged to: the agent's per-caller quotas (the idempotency ledger's
// share, its volatile cache's share, open streams) are per principal, not
// per DID, because a did:key costs nothing to make: under an open policy,
// fresh identities would each get a full share. Principal must be a pure
// function of the caller. A Policy without it charges every caller to
// SharedPrincipal (fail closed: one quota for all).
type Principals interface {
	Principal(caller string) string
}

// PrincipalOf returns the principal p charges caller to: p.Principal when
// p implements Principals, SharedPrincipal otherwise.
func PrincipalOf(p Policy, caller string) string {
	if pp, ok := p.(Principals); ok {
		return pp.Principal(caller)
	}
	return SharedPrincipal
}

// Rule lets Caller use the capabilities under Prefix.
//
// Caller is a DID or "*" (any authenticated caller). Prefix is "*" (every
// capability), a capability name (exactly that capability) or a namespace
// prefix such as "org.example" or "org.example." (every capability under it,
// at a label boundary).
type Rule struct {
	Caller string
	Prefix string
}

// Rules is an allow-list: everything not allowed by a rule is denied. The
// empty Rules deny everyone.
type Rules []Rule

// ParseRule parses "CALLER=PREFIX" (the ampagent --allow syntax), for
// example "*=org.example." or "did:key:z6Mk…=org.example.translate.text".
func ParseRule(s string) (Rule, error) {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 || i == len(s)-1 {
		return Rule{}, amp.NewError(0, "an allow rule is CALLER=PREFIX, for example *=org.example.")
	}
	r := Rule{Caller: s[:i], Prefix: s[i+1:]}
	if r.Caller != "*" && (!amp.ValidDID(r.Caller) || amp.BareDID(r.Caller) != r.Caller) {
		return Rule{}, amp.NewError(0, "the caller of an allow rule must be * or a did")
	}
	if r.Prefix != "*" && capability.ValidateNamespacePrefix(r.Prefix) != nil {
		return Rule{}, amp.NewError(0, "the prefix of an allow rule must be *, a capability name or a namespace prefix")
	}
	return r, nil
}

func (r Rule) matchesCaller(caller string) bool {
	return r.Caller == "*" || r.Caller == amp.BareDID(caller)
}

func (r Rule) covers(name string) bool {
	if r.Prefix == "*" {
		return true
	}
	p := strings.TrimSuffix(r.Prefix, ".")
	return name == p || capability.InNamespace(name, p)
}

// AllowCaller reports whether some rule names the caller.
func (rs Rules) AllowCaller(caller string) bool {
	for _, r := range rs {
		if r.matchesCaller(caller) {
			return true
		}
	}
	return false
}

// Principal implements Principals: a caller named by a rule (its DID) is
// its own principal; every other caller (admitted by a "*" rule only, or
// not at all) is SharedPrincipal.
func (rs Rules) Principal(caller string) string {
	bare := amp.BareDID(caller)
	for _, r := range rs {
		if r.Caller == bare {
			return bare
		}
	}
	return SharedPrincipal
}

// AllowCapability reports whether some rule for the caller covers name.
func (rs Rules) AllowCapability(caller, name string) bool {
	for _, r := range rs {
		if r.matchesCaller(caller) && r.covers(name) {
			return true
		}
	}
	return false
}
