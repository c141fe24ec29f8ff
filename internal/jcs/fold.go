package jcs

import "strings"

// CaseVariant reports whether a member of o is spelt like one of names
// except for case without being it: "CAPABILITY" or "Capability" beside
// (or instead of) "capability", or "ſummary" (U+017F) for "summary".
// encoding/json matches an object member to a struct field with Unicode
// simple case folding and keeps the last match, so such a member is the
// same member to a struct decoder and another member to RFC 8785, to a
// proof or digest over it, and to every exact reader: callers reading
// signed or digested documents refuse it rather than let member order
// pick what a struct decoder sees. A member named exactly as one of names
// is never a variant. It costs len(o) × len(names) comparisons.
func (o Object) CaseVariant(names ...string) bool {
	for _, m := range o {
		if variantOf(m.Name, names) {
			return true
		}
	}
	return false
}

// variantOf reports whether name folds to one of names without being it.
func variantOf(name string, names []string) bool {
	folded := false
	for _, n := range names {
		if name == n {
			return false
		}
		folded = folded || strings.EqualFold(name, n)
	}
	return folded
}
