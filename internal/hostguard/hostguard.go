package hostguard

import (
	"net"
	"net/http"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// MaxNames bounds the names a Guard is given (--allow-host).
const MaxNames = 64

// ErrInvalidName names a refused allowed-host name: not a host name or an
// IP literal, with a port, or more than MaxNames of them.
const ErrInvalidName amp.ErrName = "invalid_allowed_host"

// Guard is the Host rule of one listener. Its zero value serves only
// localhost and IP literals (loopback ones on a loopback connection), on
// every connection.
type Guard struct {
	// names are the allowed names, lowercased.
	names map[string]bool
	// loopbackOnly: a connection that did not arrive on a loopback
	// address is not checked (OnLoopbackOnly).
	loopbackOnly bool
}

// New returns the Guard that also serves names: each a host name (letters,
// digits, hyphens and dots, no empty label, at most 253 characters) or an
// IP literal, without a port, compared case-insensitively; at most
// MaxNames. Errors are ErrInvalidName and never echo a name.
func New(names []string) (Guard, error) {
	if len(names) > MaxNames {
		return Guard{}, amp.Named(0, ErrInvalidName, "more than %d allowed host names", MaxNames)
	}
	g := Guard{names: make(map[string]bool, len(names))}
	for _, n := range names {
		n = strings.ToLower(n)
		if !validName(n) {
			return Guard{}, amp.Named(0, ErrInvalidName, "an allowed host is a host name (letters, digits, hyphens and dots) or an IP address, without a port")
		}
		g.names[n] = true
	}
	return g, nil
}

// OnLoopbackOnly returns g applied only to connections that arrived on a
// loopback address; any Host passes on another one. It is the rule of a
// listener whose answers are public when it is bound for the network (the
// mirror, CATALOG-1) or that serves nobody without a credential there (MCP),
// but that a rebound page reaches on loopback.
func (g Guard) OnLoopbackOnly() Guard {
	g.loopbackOnly = true
	return g
}

// validName reports whether n (lowercased) is a host name of at most 253
// characters of letters, digits, hyphens and dots, with no empty label, or
// an IP literal.
func validName(n string) bool {
	if net.ParseIP(n) != nil {
		return true
	}
	if n == "" || len(n) > 253 {
		return false
	}
	for label := range strings.SplitSeq(n, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return true
}

// Allows reports whether r's Host is one g serves: "localhost" or a given
// name (any port), or an IP literal, a loopback one when r's connection
// arrived on a loopback address (an IP literal is never a rebound name: a
// browser sends it only to the address it names). A request whose local
// address is unknown counts as a loopback one (the stricter rule).
func (g Guard) Allows(r *http.Request) bool {
	loopback := arrivedOnLoopback(r)
	if g.loopbackOnly && !loopback {
		return true
	}
	host := strings.ToLower(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if host == "localhost" || g.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || !loopback)
}

// arrivedOnLoopback reports whether r's connection arrived on a loopback
// address; unknown counts as yes.
func arrivedOnLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return true
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return true
	}
	ip := net.ParseIP(host)
	return ip == nil || ip.IsLoopback()
}

// RefusalText is the answer to a Host a Guard refuses; the Host is not
// echoed.
const RefusalText = "misdirected request: the Host header names no host this listener serves; use 127.0.0.1, localhost, or a name given with --allow-host\n"

// Wrap returns next behind g: a refused request is 421 Misdirected Request
// with RefusalText (text/plain, no-store, nosniff), and next never runs.
// A listener that serves pages sets its script-free policy around it
// (mirror.ScriptFree).
func (g Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.Allows(r) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusMisdirectedRequest)
		if r.Method != http.MethodHead {
			w.Write([]byte(RefusalText))
		}
	})
}
