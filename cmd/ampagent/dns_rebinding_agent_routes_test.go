//go:build unix

package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// TestLoopbackAgentListenerRefusesARebindingHostOnEveryRoute: with
// --catalog the agent's --listen must be a loopback address, and /ui/ on it
// is guarded against DNS rebinding (CATALOG-20). Every other route of that
// same loopback listener is not.
//
// Attack: DNS rebinding against a loopback agent started with --catalog
// --agh. The operator opens a page of rebind.attacker.example, whose name
// then resolves to 127.0.0.1. The /ui/ index is refused (421), but the
// page's script fetches /agh/v0/capability-catalog on the same origin and
// reads the same capability list (org.example.translate, its bundle id,
// its schema hashes). It also reads /readyz and /healthz (generation,
// ledger use, connection counts). Being same-origin, it can POST
// application/cbor to /amp/v1/messages, which a cross-origin page cannot
// do without a CORS preflight, and read the answer: the loopback agent
// takes it as a local peer.
//
// Before: each of these routes answered 200 (or the AMP handler's own
// answer) to "Host: rebind.attacker.example:PORT" (review 37).
//
// Now: what CATALOG-20's amendment decided for the mirror ("a mirror on
// loopback is bound for the station ... guarding only /ui/ would protect
// nothing"). On a connection that arrived on a loopback address, every
// route of --listen answers only localhost, a loopback IP literal or an
// --allow-host name, and anything else gets 421 before the route runs
// (hostguard.Guard.OnLoopbackOnly around the whole mux).
func TestLoopbackAgentListenerRefusesARebindingHostOnEveryRoute(t *testing.T) {
	db, key := serveStore(t)
	doc := startServeDoc(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--catalog", "--agh")
	base, _ := doc["listening"].(string)
	u, err := url.Parse(base)
	if err != nil || base == "" {
		t.Fatalf("no listening URL: %v %v", doc, err)
	}
	rebound := "rebind.attacker.example:" + u.Port()
	// The guarded route refuses: the rule is on, and this Host is a
	// rebound one.
	if code, _ := doWithHost(t, http.MethodGet, base+"/ui/", rebound, "", nil); code != http.StatusMisdirectedRequest {
		t.Fatalf("/ui/ answered %d to a rebound Host: the premise (CATALOG-20) does not hold", code)
	}
	for _, c := range []struct {
		name, method, path, ctype, secret string
	}{
		{"AGH capability catalog (the /ui/ index's data)", http.MethodGet, agh.CatalogPath, "", "org.example.translate"},
		{"readiness", http.MethodGet, ReadyPath, "", ""},
		{"health (ledger use, connections)", http.MethodGet, amphttp.HealthPath, "", ""},
		{"AMP messages, same-origin cbor POST", http.MethodPost, amphttp.MessagesPath, amphttp.ContentType, ""},
	} {
		code, body := doWithHost(t, c.method, base+c.path, rebound, c.ctype, strings.NewReader("\xa0"))
		if code != http.StatusMisdirectedRequest || c.secret != "" && strings.Contains(body, c.secret) {
			t.Errorf("%s: Host %q on the loopback agent listener answered %d (%d bytes, leaks %q: %v): want 421 before the route runs, as /ui/ and the loopback mirror",
				c.name, rebound, code, len(body), c.secret, c.secret != "" && strings.Contains(body, c.secret))
		}
	}
}

// doWithHost sends one request with the Host header host and returns the
// status and the body.
func doWithHost(t *testing.T, method, rawURL, host, ctype string, body io.Reader) (int, string) {
	t.Helper()
	if method == http.MethodGet {
		body = nil
	}
	req, err := http.NewRequest(method, rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	return res.StatusCode, string(b)
}
