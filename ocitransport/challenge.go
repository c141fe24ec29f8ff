package ocitransport

import (
	"strconv"
	"strings"
)

// bearerRealm returns the realm of a Bearer challenge (RFC 7235 section
// 2.1, RFC 6750 section 3): the scheme, then auth-params
// (token "=" token or quoted-string) separated by commas; a later param of
// one name overrides an earlier one, and parsing stops at the first
// malformed param, keeping those before it. It reads the challenge as the
// registry client (oras-go's auth package) does, so the realm it finds is
// the one a token request will go to. ok is false for another scheme or a
// challenge without a realm.
func bearerRealm(header string) (realm string, ok bool) {
	scheme, rest := httpToken(header)
	if !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	for {
		var key, value string
		key, rest = httpToken(skipOWS(rest))
		if key == "" {
			return realm, ok
		}
		rest = skipOWS(rest)
		if rest == "" || rest[0] != '=' {
			return realm, ok
		}
		rest = skipOWS(rest[1:])
		if rest == "" {
			return realm, ok
		}
		if rest[0] == '"' {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return realm, ok
			}
			if value, err = strconv.Unquote(q); err != nil {
				return realm, ok
			}
			rest = rest[len(q):]
		} else if value, rest = httpToken(rest); value == "" {
			return realm, ok
		}
		if key == "realm" {
			realm, ok = value, true
		}
		rest = skipOWS(rest)
		if rest == "" || rest[0] != ',' {
			return realm, ok
		}
		rest = rest[1:]
	}
}

// isTChar says whether c is a token character (RFC 7230 section 3.2.6).
func isTChar(c rune) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

// httpToken splits s after its leading token.
func httpToken(s string) (token, rest string) {
	if i := strings.IndexFunc(s, func(c rune) bool { return !isTChar(c) }); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// skipOWS drops s's leading spaces and tabs.
func skipOWS(s string) string { return strings.TrimLeft(s, " \t") }
