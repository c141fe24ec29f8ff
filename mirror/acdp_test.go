package mirror

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// acdpSpecExample is ACDP-0007 §3.4's example: a document that passes
// every item of the §3.5 checklist when fetched from registry.example.com.
const acdpSpecExample = `{
  "acdp_version": "0.1.0",
  "registry_did": "did:web:registry.example.com",
  "supported_signature_algorithms": ["ed25519"],
  "supported_did_methods": ["did:web"],
  "read_authentication_methods": ["http_signatures"],
  "anonymous_public_reads": true,
  "supports_idempotency_key": true,
  "profiles": ["acdp-registry-core", "acdp-registry-discovery"],
  "limits": {
    "max_payload_bytes": 1048576,
    "max_embedded_bytes": 65536,
    "idempotency_key_ttl_seconds": 86400
  }
}`

// getACDP fetches the ACDP document from ts as a consumer that dialled
// host would (the Host header names it).
func getACDP(t *testing.T, ts *httptest.Server, method, host string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+ACDPWellKnownPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// mutate returns acdpSpecExample with f applied to its decoded form.
func mutate(t *testing.T, f func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(acdpSpecExample), &doc); err != nil {
		t.Fatal(err)
	}
	f(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestACDPChecklistRefusesEachBrokenItem: the consumer checklist that the
// Section35 test walks must tell each item apart, so that a document
// broken in one item fails that item and no other (threat: a checker
// that passes everything, making the walk of the served documents
// worthless). The §3.4 example passes all nine.
func TestACDPChecklistRefusesEachBrokenItem(t *testing.T) {
	const host = "registry.example.com"
	if f := CheckACDPCapabilities([]byte(acdpSpecExample), host, true); len(f) != 0 {
		t.Fatalf("the spec's example fails: %v", f)
	}
	limits := func(d map[string]any) map[string]any { return d["limits"].(map[string]any) }
	cases := []struct {
		name   string
		doc    func(d map[string]any)
		host   string
		item   int
		field  string
		nonPub bool
	}{
		{"version with a suffix", func(d map[string]any) { d["acdp_version"] = "0.1.0-rc1" }, host, 1, "acdp_version", false},
		{"version of two parts", func(d map[string]any) { d["acdp_version"] = "0.1" }, host, 1, "acdp_version", false},
		{"registry_did not a DID", func(d map[string]any) { d["registry_did"] = "registry.example.com" }, host, 2, "registry_did", false},
		{"registry_did a DID URL", func(d map[string]any) { d["registry_did"] = "did:web:registry.example.com#key-1" }, host, 2, "registry_did", false},
		{"registry_did of another host", func(d map[string]any) { d["registry_did"] = "did:web:evil.example.com" }, host, 2, "registry_did", false},
		{"registry_did a did:key", func(d map[string]any) {
			d["registry_did"] = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
		}, host, 2, "registry_did", false},
		{"registry_did with a path", func(d map[string]any) { d["registry_did"] = "did:web:registry.example.com:r" }, host, 2, "registry_did", false},
		{"registry_did without the port fetched", func(d map[string]any) {}, host + ":8443", 2, "registry_did", false},
		{"fetched from an IP address", func(d map[string]any) { d["registry_did"] = "did:web:127.0.0.1" }, "127.0.0.1", 2, "registry_did", false},
		{"no ed25519", func(d map[string]any) { d["supported_signature_algorithms"] = []string{"ecdsa-p256"} }, host, 3, "supported_signature_algorithms", false},
		{"no did:web", func(d map[string]any) { d["supported_did_methods"] = []string{"did:key"} }, host, 4, "supported_did_methods", false},
		{"no acdp-registry-core", func(d map[string]any) { d["profiles"] = []string{"acdp-registry-discovery"} }, host, 5, "profiles", false},
		{"embedded limit raised", func(d map[string]any) { limits(d)["max_embedded_bytes"] = 65537 }, host, 6, "limits.max_embedded_bytes", false},
		{"payload limit under 1024", func(d map[string]any) { limits(d)["max_payload_bytes"] = 1023 }, host, 7, "limits.max_payload_bytes", false},
		{"idempotency without a ttl", func(d map[string]any) { delete(limits(d), "idempotency_key_ttl_seconds") }, host, 8, "limits.idempotency_key_ttl_seconds", false},
		{"idempotency ttl over 7 days", func(d map[string]any) { limits(d)["idempotency_key_ttl_seconds"] = 604801 }, host, 8, "limits.idempotency_key_ttl_seconds", false},
		{"non-public without read authentication", func(d map[string]any) { delete(d, "read_authentication_methods") }, host, 9, "read_authentication_methods", true},
		{"limits is closed (schema-010)", func(d map[string]any) { limits(d)["max_publish_per_minute"] = 60 }, host, 0, "limits", false},
		{"a required member missing", func(d map[string]any) { delete(d, "supported_did_methods") }, host, 0, "supported_did_methods", false},
		{"a required member null", func(d map[string]any) { d["profiles"] = nil }, host, 0, "profiles", false},
		{"a member of the wrong type", func(d map[string]any) { d["anonymous_public_reads"] = "yes" }, host, 0, "document", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := CheckACDPCapabilities(mutate(t, c.doc), c.host, c.nonPub)
			if len(f) != 1 || f[0].Item != c.item || f[0].Field != c.field {
				t.Fatalf("findings %v, want item %d on %s only", f, c.item, c.field)
			}
		})
	}
	// Open top level (caps-006): an unknown member is tolerated.
	if f := CheckACDPCapabilities(mutate(t, func(d map[string]any) { d["supports_push_subscriptions"] = true }), host, true); len(f) != 0 {
		t.Fatalf("an unknown top-level member is refused: %v", f)
	}
	// The port, %3A-encoded in the DID, binds to host:port.
	if f := CheckACDPCapabilities(mutate(t, func(d map[string]any) { d["registry_did"] = "did:web:Registry.example.com%3A8443" }), host+":8443", true); len(f) != 0 {
		t.Fatalf("did:web with a port: %v", f)
	}
	if f := CheckACDPCapabilities([]byte(strings.Repeat(" ", ACDPMaxDocumentBytes)+acdpSpecExample), host, false); len(f) != 1 || f[0].Item != 0 {
		t.Fatalf("an oversized document: %v", f)
	}
}

// TestACDPDocumentClaimsNoProfileWeDoNotImplement: a server refuses to
// start with a document that claims a profile whose MUSTs it does not
// meet (acdp-registry-core needs POST /contexts, which neither the mirror
// nor the agent serves), or that breaks a checklist item it can check
// itself (ACDP-0007 §3.5.1; threat: a consumer publishing to, or relying
// on limits of, a server that only said it could).
func TestACDPDocumentClaimsNoProfileWeDoNotImplement(t *testing.T) {
	good := AgentACDPCapabilities("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", 1<<20, false)
	if err := good.Check(); err != nil {
		t.Fatalf("the agent's document with a did:key: %v", err)
	}
	if err := MirrorACDPCapabilities(DefaultMaxBundleBytes).Check(); err != nil {
		t.Fatalf("the mirror's document: %v", err)
	}
	cases := map[string]struct {
		mod  func(c *ACDPCapabilities)
		want string
	}{
		"claims acdp-registry-core": {func(c *ACDPCapabilities) { c.Profiles = []string{ACDPProfileRegistryCore} }, "profiles"},
		"profiles null":             {func(c *ACDPCapabilities) { c.Profiles = nil }, "profiles"},
		"not a DID":                 {func(c *ACDPCapabilities) { c.RegistryDID = "agent" }, "registry_did"},
		"payload under 1024":        {func(c *ACDPCapabilities) { c.Limits.MaxPayloadBytes = 1000 }, "limits.max_payload_bytes"},
		"embedded not 65536":        {func(c *ACDPCapabilities) { c.Limits.MaxEmbeddedBytes = 1 << 20 }, "limits.max_embedded_bytes"},
		"idempotency without a ttl": {func(c *ACDPCapabilities) { c.SupportsIdempotencyKey = true }, "idempotency_key_ttl_seconds"},
		"no ed25519":                {func(c *ACDPCapabilities) { c.SupportedSignatureAlgorithms = []string{"rsa"} }, "supported_signature_algorithms"},
		"no did:web":                {func(c *ACDPCapabilities) { c.SupportedDIDMethods = []string{"did:key"} }, "supported_did_methods"},
		"version not semver":        {func(c *ACDPCapabilities) { c.ACDPVersion = "v0.1" }, "acdp_version"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			doc := good
			doc.Profiles = []string{}
			c.mod(&doc)
			err := doc.Check()
			if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want misconfigured naming %s", err, c.want)
			}
			if h, err := ACDPHandler(doc); h != nil || err == nil {
				t.Fatal("a handler was built for a misconfigured document")
			}
		})
	}
}

// TestACDPRegistryDIDIsTheHostAndNeverAnIP: the mirror's registry_did is
// the did:web of the host the consumer named, lowercased, the port
// %3A-encoded; a Host that did:web cannot carry (an IP address, which the
// method forbids, a malformed name, none) gets the §4 envelope with a
// fixed message (threat: a DID that binds to nothing a consumer can
// verify, and a Host header repeated into a consumer's logs or terminal).
func TestACDPRegistryDIDIsTheHostAndNeverAnIP(t *testing.T) {
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	for host, want := range map[string]string{
		"mirror.example.org":      "did:web:mirror.example.org",
		"Mirror.Example.ORG:8443": "did:web:mirror.example.org%3A8443",
		"localhost:8470":          "did:web:localhost%3A8470",
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, ACDPWellKnownPath, nil)
		req.Host = host
		m.ServeHTTP(rec, req)
		var doc ACDPCapabilities
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); rec.Code != 200 || err != nil || doc.RegistryDID != want {
			t.Errorf("Host %q: %d %s, want registry_did %s", host, rec.Code, rec.Body, want)
		}
		if f := CheckACDPCapabilities(rec.Body.Bytes(), host, false); len(f) != 1 || f[0].Item != 5 {
			t.Errorf("Host %q: findings %v, want item 5 only", host, f)
		}
	}
	for _, host := range []string{"", "127.0.0.1", "127.0.0.1:8470", "[::1]:8470", "mirror..example.org",
		"-mirror.example.org", "mirror.example.org:0", "mirror.example.org:08470", "mirror.example.org:99999",
		"mirror_1.example.org", "mirror.example.org.", "evil\x1b]0;owned\x07.example.org", "a%3Ab.example.org",
		strings.Repeat("a.", 130) + "org"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, ACDPWellKnownPath, nil)
		req.Host = host
		m.ServeHTTP(rec, req)
		code := acdpEnvelope(t, rec.Result(), rec.Body.Bytes())
		if rec.Code != http.StatusBadRequest || code != ACDPCodeSchemaViolation {
			t.Errorf("Host %q: %d %s, want 400 schema_violation", host, rec.Code, rec.Body)
		}
		if host != "" && strings.Contains(rec.Body.String(), host) {
			t.Errorf("Host %q is echoed: %s", host, rec.Body)
		}
	}
}

// acdpEnvelope checks that an error answer is the ACDP-0007 §4 envelope
// (application/acdp+json, exactly {"error":{"code","message"}}: the schema
// is closed) and returns its code.
func acdpEnvelope(t *testing.T, resp *http.Response, body []byte) string {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != ACDPContentType {
		t.Errorf("error Content-Type %q, want %s", ct, ACDPContentType)
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(body, &env); err != nil || len(env) != 1 || len(env["error"]) != 2 ||
		env["error"]["code"] == "" || env["error"]["message"] == "" {
		t.Errorf("not the §4 envelope: %s", body)
		return ""
	}
	return env["error"]["code"]
}

// TestACDPRouteAnswersErrorsAsTheSection4Envelope: every failure on the
// mirror's ACDP route is the §4 JSON envelope as application/acdp+json
// with the status §5 gives its code, never the mirror's own envelope,
// CBOR or a framework page; GET, HEAD and conditional GET work as §3.6
// caching expects (threat: a consumer that cannot parse a refusal, or
// caches one).
func TestACDPRouteAnswersErrorsAsTheSection4Envelope(t *testing.T) {
	_, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		resp, body := getACDP(t, ts, method, "mirror.example.org")
		if code := acdpEnvelope(t, resp, body); resp.StatusCode != http.StatusNotImplemented || code != ACDPCodeNotImplemented ||
			resp.Header.Get("Allow") != "GET, HEAD" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v %s", method, resp.StatusCode, resp.Header, body)
		}
	}
	resp, body := getACDP(t, ts, http.MethodGet, "mirror.example.org")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ACDPContentType ||
		resp.Header.Get("Cache-Control") != "public, max-age=3600" || resp.Header.Get("ETag") == "" {
		t.Fatalf("GET: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	head, hbody := getACDP(t, ts, http.MethodHead, "mirror.example.org")
	if head.StatusCode != 200 || len(hbody) != 0 || head.Header.Get("Content-Length") != resp.Header.Get("Content-Length") {
		t.Fatalf("HEAD: %d %v", head.StatusCode, head.Header)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+ACDPWellKnownPath, nil)
	req.Host = "mirror.example.org"
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	r304, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r304.Body.Close()
	if r304.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", r304.StatusCode)
	}
	// The handler the agent mounts answers a path it was not given with
	// not_found, in the same envelope.
	h, err := ACDPHandler(AgentACDPCapabilities("did:web:agent.example.org", 1<<20, false))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/acdp.json/x", nil))
	if code := acdpEnvelope(t, rec.Result(), rec.Body.Bytes()); rec.Code != 404 || code != ACDPCodeNotFound {
		t.Fatalf("another path: %d %s", rec.Code, rec.Body)
	}
	for _, code := range []string{ACDPCodeNotFound, ACDPCodeSchemaViolation, ACDPCodeNotImplemented, ACDPCodeInternal} {
		rec := httptest.NewRecorder()
		writeACDPError(rec, code)
		if got := acdpEnvelope(t, rec.Result(), rec.Body.Bytes()); got != code {
			t.Errorf("code %s written as %s", code, got)
		}
	}
}
