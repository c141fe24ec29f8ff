package hostguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRebindingHostIsRefused: the rule, connection by connection (threat:
// DNS rebinding, a page's name resolved to 127.0.0.1 after load reaching a
// loopback listener with its own name in Host). On a loopback connection
// only a loopback IP literal, localhost or a given name passes; on a
// connection that arrived on another address any IP literal passes too (an
// IP literal is never a rebound name), and a name still must be given;
// OnLoopbackOnly passes anything there.
func TestRebindingHostIsRefused(t *testing.T) {
	g, err := New([]string{"Catalog.Example.org", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8080}
	for _, c := range []struct {
		host         string
		local        net.Addr
		want, loWant bool // Guard, OnLoopbackOnly
	}{
		{"127.0.0.1:8080", loop, true, true},
		{"127.0.0.2", loop, true, true},
		{"[::1]:8080", loop, true, true},
		{"[::1]", loop, true, true},
		{"localhost:8080", loop, true, true},
		{"LOCALHOST", loop, true, true},
		{"catalog.example.org:443", loop, true, true},
		{"10.1.2.3:8080", loop, true, true},
		{"rebind.attacker.example:8080", loop, false, false},
		{"localhost.", loop, false, false},
		{"sub.localhost", loop, false, false},
		{"localhost.attacker.example", loop, false, false},
		{"192.168.1.5:8080", loop, false, false},
		{"", loop, false, false},
		{"[::1", loop, false, false},
		{"a:b:c", loop, false, false},
		{"192.168.1.5:8080", lan, true, true},
		{"[fe80::1]:8080", lan, true, true},
		{"catalog.example.org", lan, true, true},
		{"rebind.attacker.example:8080", lan, false, true},
		{"", lan, false, true},
		{"rebind.attacker.example:8080", nil, false, false},
		{"192.168.1.5:8080", nil, false, false}, // unknown local address: the loopback rule
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = c.host
		if c.local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, c.local))
		}
		if got := g.Allows(r); got != c.want {
			t.Errorf("Host %q on %v: allowed %v, want %v", c.host, c.local, got, c.want)
		}
		if got := g.OnLoopbackOnly().Allows(r); got != c.loWant {
			t.Errorf("OnLoopbackOnly: Host %q on %v: allowed %v, want %v", c.host, c.local, got, c.loWant)
		}
	}
	var zero Guard
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "catalog.example.org"
	if zero.Allows(r) {
		t.Error("the zero Guard serves a name nobody gave")
	}
}

// TestRefusalNeverRunsTheRouteNorEchoesTheHost: a refused request gets 421
// with the fixed text, and the route never runs (nothing of the store is
// read for a rebound page).
func TestRefusalNeverRunsTheRouteNorEchoesTheHost(t *testing.T) {
	ran := false
	h := Guard{}.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r := httptest.NewRequest(method, "/ui/trust", nil)
		r.Host = "rebind.attacker.example:8080"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if ran || w.Code != http.StatusMisdirectedRequest || strings.Contains(w.Body.String(), "attacker") ||
			w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: ran %v, %d %q %v", method, ran, w.Code, w.Body.String(), w.Header())
		}
		if method == http.MethodGet && w.Body.String() != RefusalText {
			t.Errorf("GET: body %q", w.Body.String())
		}
	}
}

// TestAllowedNamesAreHostNamesOnly: a name is a host name or an IP
// literal, no port, no wildcard, no URL, at most MaxNames (threat: an
// operator's "*.example.org" or "host:443" read as something it is not).
func TestAllowedNamesAreHostNamesOnly(t *testing.T) {
	for _, bad := range []string{"", "catalog.example.org:443", "*.example.org", "http://catalog.example.org", "a..b", "exa mple.org", strings.Repeat("a", 64) + ".org"} {
		if _, err := New([]string{bad}); err == nil || strings.Contains(err.Error(), bad) && bad != "" {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	many := make([]string, MaxNames+1)
	for i := range many {
		many[i] = "h.example"
	}
	if _, err := New(many); err == nil {
		t.Errorf("%d names accepted", len(many))
	}
}
