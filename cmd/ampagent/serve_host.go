package main

import (
	"net"
	"net/http"
	"strings"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/mirror"
)

// hostGuard is the agent's rule against DNS rebinding for the listeners
// that serve the operator, not the network: the catalog (--catalog,
// --catalog-listen) and the metrics (--metrics-listen)
// (docs/SPEC-DECISIONS.md CATALOG-20). A page of rebind.attacker.example
// whose name then resolves to 127.0.0.1 reaches such a listener with
// "Host: rebind.attacker.example:PORT", and reads the answer as its own
// origin's; the guard refuses that Host before the route runs, so nothing
// of the store or the metrics is read.
//
// A request is served when its Host (port aside) is "localhost", a name
// given with --allow-host, or an IP literal: a loopback one on a
// connection that arrived on a loopback address, any one otherwise (an IP
// literal is never a rebound name: a browser sends it only to the address
// it names). Anything else is 421 Misdirected Request.
type hostGuard struct {
	// names are the --allow-host names, lowercased.
	names map[string]bool
}

// maxAllowedHosts bounds --allow-host.
const maxAllowedHosts = 64

// newHostGuard checks the --allow-host names: each a host name or an IP
// literal, without a port, at most maxAllowedHosts of them.
func newHostGuard(names []string) (hostGuard, error) {
	if len(names) > maxAllowedHosts {
		return hostGuard{}, cliutil.Usagef("--allow-host is given more than %d times", maxAllowedHosts)
	}
	g := hostGuard{names: make(map[string]bool, len(names))}
	for _, n := range names {
		n = strings.ToLower(n)
		if !validAllowedHost(n) {
			return hostGuard{}, cliutil.Usagef("--allow-host takes a host name (letters, digits, hyphens and dots) or an IP address, without a port")
		}
		g.names[n] = true
	}
	return g, nil
}

// validAllowedHost reports whether n (lowercased) is a host name of at
// most 253 characters of letters, digits, hyphens and dots, with no empty
// label, or an IP literal.
func validAllowedHost(n string) bool {
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

// allows reports whether r's Host is one the guard serves.
func (g hostGuard) allows(r *http.Request) bool {
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
	return ip != nil && (ip.IsLoopback() || !arrivedOnLoopback(r))
}

// arrivedOnLoopback reports whether r's connection arrived on a loopback
// address; a request whose local address is unknown counts as one (the
// stricter rule).
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

// misdirectedBody is the answer to a Host the guard refuses; the Host is
// not echoed.
const misdirectedBody = "misdirected request: the Host header names no host this listener serves; use 127.0.0.1, localhost, or a name given with --allow-host\n"

// wrap returns next behind the guard.
func (g hostGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.allows(r) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", mirror.ContentSecurityPolicy)
		w.WriteHeader(http.StatusMisdirectedRequest)
		if r.Method != http.MethodHead {
			w.Write([]byte(misdirectedBody))
		}
	})
}
