//go:build unix

package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// getWithHost GETs rawURL with the Host header host and returns the status
// and the body.
func getWithHost(t *testing.T, rawURL, host string) (int, string) {
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

// TestLoopbackCatalogAndMetricsRefuseARebindingHost: the catalog
// (--catalog, --catalog-listen) and the metrics listener
// (--metrics-listen) sit on loopback unless --unsafe-listen: they are for
// the operator, not the network.
//
// Attack: DNS rebinding. The operator opens a page of
// rebind.attacker.example, whose name then resolves to 127.0.0.1; the
// page's script fetches http://rebind.attacker.example:PORT/ui/trust (or
// /metrics): same origin for the browser, so it reads the answer and
// sends the store's trust list, bundles and capabilities (or the agent's
// metrics) home. The request reaches the loopback listener with "Host:
// rebind.attacker.example:PORT".
//
// Defence (CATALOG-20): such a listener answers only a Host that is a
// loopback IP literal or "localhost" (any port), or a name given with
// --allow-host; any other Host is 421 Misdirected Request, before
// anything of the store is read.
func TestLoopbackCatalogAndMetricsRefuseARebindingHost(t *testing.T) {
	db, key := serveStore(t)
	own := startServeDoc(t, "--db", db, "--key", key, "--allow", "*=org.example.",
		"--catalog-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--allow-host", "Catalog.Proxy.Example")
	db2, key2 := serveStore(t)
	shared := startServeDoc(t, "--db", db2, "--key", key2, "--allow", "*=org.example.", "--catalog")
	catOwn, _ := own["catalog"].(string)
	metricsURL, _ := own["metrics"].(string)
	catShared, _ := shared["catalog"].(string)
	if catOwn == "" || metricsURL == "" || catShared == "" {
		t.Fatalf("start documents name no catalog or metrics URL: %v %v", own, shared)
	}
	for _, c := range []struct {
		name, url, secret string
		named             bool // --allow-host catalog.proxy.example was given
	}{
		{"catalog listener: trust page", catOwn + "trust", "org.example", true},
		{"catalog listener: index", catOwn, "org.example.translate", true},
		{"catalog on the agent listener: index", catShared, "org.example.translate", false},
		{"metrics listener", metricsURL, "# HELP", true},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		served := []string{u.Host, "localhost:" + u.Port(), "localhost", "127.0.0.1"}
		if c.named {
			served = append(served, "catalog.proxy.example", "CATALOG.proxy.example:443")
		}
		for _, host := range served {
			if code, body := getWithHost(t, c.url, host); code != http.StatusOK || !strings.Contains(body, c.secret) {
				t.Errorf("%s: Host %q got %d: the operator's own name must be served", c.name, host, code)
			}
		}
		refused := []string{"rebind.attacker.example:" + u.Port(), "rebind.attacker.example", "localhost.attacker.example",
			"127.0.0.1.attacker.example", "10.0.0.1:" + u.Port()}
		if !c.named {
			refused = append(refused, "catalog.proxy.example")
		}
		for _, host := range refused {
			code, body := getWithHost(t, c.url, host)
			if code != http.StatusMisdirectedRequest || strings.Contains(body, c.secret) || strings.Contains(body, "attacker") {
				t.Errorf("%s: Host %q (a rebound name) answered %d (%d bytes): want 421, nothing of the page, the Host not echoed", c.name, host, code, len(body))
			}
		}
	}
}

// TestAllowHostTakesOnlyAHostName: --allow-host names a host, no port, no
// wildcard, no URL; anything else is refused before serve starts (the
// rule's own cases: internal/hostguard's tests).
func TestAllowHostTakesOnlyAHostName(t *testing.T) {
	db, key := serveStore(t)
	r := serveRefusal(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--listen", freeAddr(t),
		"--catalog-listen", freeAddr(t), "--allow-host", "catalog.example.org:443")
	if r.code == 0 || !strings.Contains(r.stderr, "--allow-host") {
		t.Fatalf("--allow-host with a port: exit %d, stderr %s", r.code, r.stderr)
	}
}
