//go:build unix

package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/catalog"
)

// TestAgentRoutesBesideTheCatalogCarryTheScriptFreePolicy: with --catalog
// the agent's listener serves the operator's HTML catalog under /ui/, so
// every other answer of that listener shares the catalog's origin.
// MIRROR-7 is the rule for such an origin: every answer that is not a
// catalog page carries "X-Content-Type-Options: nosniff" and a
// Content-Security-Policy under which no script runs, whatever its route
// and status.
//
// Attack: the AGH routes (/agh/v0/...) answer publisher-written text
// (names, summaries, descriptions) JSON-encoded without HTML escaping, so
// "</script><script>..." reaches the body as is. Any rendering of such an
// answer as a document on the catalog's origin (a browser or extension
// that ignores the media type, a proxy that rewrites it, a future route
// served as text/html) would run the publisher's script with the
// operator's access to the catalog; the policy stops it.
//
// Defence: the agent's router sets mirror.ContentSecurityPolicy and
// nosniff before any route runs (mirror.ScriptFree); the catalog under
// /ui/ keeps its own policy.
func TestAgentRoutesBesideTheCatalogCarryTheScriptFreePolicy(t *testing.T) {
	db, key := serveStore(t)
	doc := startServeDoc(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--catalog", "--agh")
	base, _ := doc["listening"].(string)
	if base == "" {
		t.Fatalf("no agent URL: %v", doc)
	}
	res, err := http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") != catalog.ContentSecurityPolicy {
		t.Fatalf("the catalog on the agent listener: %d, Content-Security-Policy %q; want 200 with the catalog's own policy",
			res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/agh/v0/capability-catalog"},
		{http.MethodGet, "/agh/v0/peer-card"},
		{http.MethodGet, "/agh/v0/capabilities/no.such"},
		{http.MethodPost, "/agh/v0/peer-card"},
		{http.MethodGet, "/healthz"},
		{http.MethodGet, "/readyz"},
		{http.MethodGet, "/no-such-route"},
		{http.MethodGet, "/amp/v1/messages"},
		{http.MethodGet, "/ui"}, // the router's redirect to /ui/
	} {
		req, err := http.NewRequest(c.method, base+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultTransport.RoundTrip(req) // no redirect followed
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "sandbox") ||
			res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s (%d, %s): Content-Security-Policy %q, X-Content-Type-Options %q on the catalog's origin; want MIRROR-7's script-free policy and nosniff",
				c.method, c.path, res.StatusCode, res.Header.Get("Content-Type"), csp, res.Header.Get("X-Content-Type-Options"))
		}
	}
}
