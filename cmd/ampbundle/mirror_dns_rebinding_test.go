package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// getHost GETs rawURL with the Host header host and returns the status and
// the body.
func getHost(t *testing.T, rawURL, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	return res.StatusCode, string(body)
}

// TestLoopbackMirrorRefusesARebindingHost: 'ampbundle serve' listens on
// 127.0.0.1 by default; a loopback mirror's store is the station's, not the
// network's (CATALOG-1's "public" is to whoever the mirror is bound for).
//
// Attack: DNS rebinding. The operator opens a page of
// rebind.attacker.example, whose name then resolves to 127.0.0.1; the
// page's script fetches http://rebind.attacker.example:8470/ui/trust (or
// /index.json, a bundle, /metrics): same origin for the browser, so it
// reads the station's catalog, trust list and bundles and sends them home.
// The request reaches the loopback listener with "Host:
// rebind.attacker.example:8470".
//
// Defence (CATALOG-20, as amended): on a connection that arrived on loopback, every
// route of the mirror answers only a Host that is localhost, a loopback IP
// literal or an --allow-host name; the metrics listener has the agent's
// rule (CATALOG-20). Anything else is 421 before the route reads the store.
func TestLoopbackMirrorRefusesARebindingHost(t *testing.T) {
	db := storeWithSamples(t)
	doc := startMirrorCLIDoc(t, db, "--metrics-listen", "127.0.0.1:0", "--allow-host", "Mirror.Proxy.Example")
	if doc.Metrics == "" {
		t.Fatalf("no metrics URL: %+v", doc)
	}
	for _, c := range []struct{ name, url, secret string }{
		{"catalog trust page", doc.Listening + "/ui/trust", "example"},
		{"catalog index", doc.Listening + "/ui/", "com.acme.geo.distance"},
		{"mirror index", doc.Listening + "/index.json", "generation"},
		{"well-known document", doc.Listening + "/.well-known/ampbundle-registry.json", "{"},
		{"metrics listener", doc.Metrics, "# HELP"},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range []string{u.Host, "localhost:" + u.Port(), "localhost", "[::1]:" + u.Port(), "mirror.proxy.example", "MIRROR.proxy.example:443"} {
			if code, body := getHost(t, c.url, host); code != http.StatusOK || !strings.Contains(body, c.secret) {
				t.Errorf("%s: Host %q got %d: the operator's own name must be served", c.name, host, code)
			}
		}
		for _, host := range []string{"rebind.attacker.example:" + u.Port(), "rebind.attacker.example", "localhost.attacker.example",
			"127.0.0.1.attacker.example", "10.0.0.1:" + u.Port(), "proxy.example"} {
			code, body := getHost(t, c.url, host)
			if code != http.StatusMisdirectedRequest || strings.Contains(body, c.secret) || strings.Contains(body, "attacker") {
				t.Errorf("%s: Host %q (a rebound name) answered %d (%d bytes): want 421, nothing of the page, the Host not echoed", c.name, host, code, len(body))
			}
		}
	}
}

// TestMirrorAllowHostTakesOnlyAHostName: --allow-host names a host, no
// port, no wildcard, no URL; anything else is a usage error before the
// mirror opens anything.
func TestMirrorAllowHostTakesOnlyAHostName(t *testing.T) {
	db := storeWithSamples(t)
	for _, bad := range []string{"mirror.example.org:443", "*.example.org", "http://mirror.example.org"} {
		r := runCLI(t, nil, "serve", "--db", db, "--listen", "127.0.0.1:0", "--allow-host", bad)
		if r.code != 2 || !strings.Contains(r.stderr, "--allow-host") {
			t.Errorf("--allow-host %q: exit %d, stderr %s", bad, r.code, r.stderr)
		}
	}
}
