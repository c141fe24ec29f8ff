package mirror

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestACDPHostDerivedDocumentCannotPoisonASharedCache: the mirror's
// ACDP-0007 document names registry_did as the did:web of the request's
// Host, and is sent "Cache-Control: public, max-age=3600" (§3.6).
//
// Attack: the mirror sits behind a caching reverse proxy that forwards the
// client's Host but keys its cache on the upstream URL (nginx's default
// proxy_cache_key is $scheme$proxy_host$request_uri, with the common
// "proxy_set_header Host $host"). One request with "Host:
// attacker.example" would store a document whose registry_did is
// did:web:attacker.example, served for an hour to every consumer of the
// mirror's document.
//
// Defence (MIRROR-2): an answer that varies with Host says so (Vary:
// Host), on 200 and 304 alike; the agent's document, whose DID is fixed,
// stays public and varies with nothing.
func TestACDPHostDerivedDocumentCannotPoisonASharedCache(t *testing.T) {
	_, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	dids := map[string]string{}
	for _, host := range []string{"mirror.example.org", "attacker.example"} {
		resp, body := getACDP(t, ts, http.MethodGet, host)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Host %s: %d %s", host, resp.StatusCode, body)
		}
		var doc struct {
			RegistryDID string `json:"registry_did"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		dids[host] = doc.RegistryDID
		if !sharedCacheSafe(resp.Header) {
			t.Errorf("Host %s: registry_did %q is derived from Host, yet the answer is shared-cacheable without Vary: Host (Cache-Control %q, Vary %q): a caching proxy keyed on its upstream serves it for every Host",
				host, doc.RegistryDID, resp.Header.Get("Cache-Control"), resp.Header.Values("Vary"))
		}
		// A revalidation (304) refreshes the stored answer with its
		// headers: it must say the same.
		req, err := http.NewRequest(http.MethodGet, ts.URL+ACDPWellKnownPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
		r304, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r304.Body.Close()
		if r304.StatusCode != http.StatusNotModified || !sharedCacheSafe(r304.Header) {
			t.Errorf("Host %s: revalidation %d with Cache-Control %q, Vary %q: want 304 with Vary: Host",
				host, r304.StatusCode, r304.Header.Get("Cache-Control"), r304.Header.Values("Vary"))
		}
	}
	if dids["mirror.example.org"] == dids["attacker.example"] {
		t.Fatalf("the document does not depend on Host (%v): the premise of this test is gone", dids)
	}
	// The agent's document names its own DID whatever the Host: §3.6's
	// caching as is.
	h, err := ACDPHandler(AgentACDPCapabilities("did:web:agent.example.org", 1<<20, false))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ACDPWellKnownPath, nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != acdpCacheControl || len(rec.Header().Values("Vary")) != 0 {
		t.Errorf("fixed-DID document: %d, Cache-Control %q, Vary %q; want 200, %q, no Vary",
			rec.Code, rec.Header().Get("Cache-Control"), rec.Header().Values("Vary"), acdpCacheControl)
	}
}

// sharedCacheSafe reports whether a shared cache may not serve the answer
// of h to a request naming another Host.
func sharedCacheSafe(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f == "*" || strings.EqualFold(f, "Host") {
				return true
			}
		}
	}
	cc := strings.ToLower(h.Get("Cache-Control"))
	return strings.Contains(cc, "private") || strings.Contains(cc, "no-store")
}
