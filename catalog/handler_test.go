package catalog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

func get(t *testing.T, h http.Handler, method, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// TestHostilePublisherStringsAreEscaped: script tags, javascript: URLs,
// attribute breakers and RTL overrides from a bundle's notes, schema and
// property names reach every page as inert text; huge strings are cut.
func TestHostilePublisherStringsAreEscaped(t *testing.T) {
	h := newHandler(t, newStore(t, hostileBundle(t)))
	pages := []string{"/ui/", "/ui/cap?name=org.hostile.script", "/ui/version?name=org.hostile.script&v=1.0.0",
		"/ui/compat?name=org.hostile.script", "/ui/bundle?id=org.hostile", "/ui/search?q=hostile",
		"/ui/schema?b=org.hostile&k=in.json"}
	for _, p := range pages {
		res, body := get(t, h, http.MethodGet, p)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", p, res.StatusCode)
		}
		for _, bad := range []string{"<script", "<img", "<svg", `href="javascript:`, "\u202e"} {
			if strings.Contains(strings.ToLower(body), bad) {
				t.Errorf("%s: the page holds %q", p, bad)
			}
		}
	}
	_, body := get(t, h, http.MethodGet, "/ui/version?name=org.hostile.script&v=1.0.0")
	if !strings.Contains(body, "&lt;script&gt;document.title") || !strings.Contains(body, `\u202e`) {
		t.Errorf("the notes are not shown escaped:\n%s", body)
	}
	if long := clean(strings.Repeat("x", 10000), MaxText); len(long) > MaxText+40 || !strings.Contains(long, "more bytes") {
		t.Errorf("a huge string is not cut: %d bytes", len(long))
	}
}

// TestCatalogHeadersAndMethodsFailClosed: every answer carries the strict
// CSP, nosniff and no-referrer; only GET and HEAD are served; an unknown
// page, name or over-long query is an error page, not a panic.
func TestCatalogHeadersAndMethodsFailClosed(t *testing.T) {
	h := newHandler(t, newStore(t))
	for _, tc := range []struct {
		method, target string
		code           int
	}{
		{http.MethodGet, "/ui/", 200},
		{http.MethodHead, "/ui/trust", 200},
		{http.MethodGet, "/ui/style.css", 200},
		{http.MethodPost, "/ui/", 405},
		{http.MethodDelete, "/ui/bundle?id=org.example.translate", 405},
		{http.MethodGet, "/ui/nothing", 404},
		{http.MethodGet, "/ui/cap?name=org.none", 404},
		{http.MethodGet, "/ui/search?q=" + strings.Repeat("a", MaxQuery+1), 400},
		{http.MethodGet, "/ui/cap?name=" + strings.Repeat("a", maxParam+1), 400},
	} {
		res, body := get(t, h, tc.method, tc.target)
		if res.StatusCode != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.target[:min(len(tc.target), 40)], res.StatusCode, tc.code)
		}
		if res.Header.Get("Content-Security-Policy") != ContentSecurityPolicy || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
			res.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s %s: headers %v", tc.method, tc.target[:min(len(tc.target), 40)], res.Header)
		}
		if tc.method == http.MethodHead && body != "" {
			t.Errorf("HEAD has a body")
		}
	}
}

// TestCatalogPagesShowTheStore: the pages show the translate sample's
// versions, the matrix's incompatible cell with its rule and pointer, the
// schema $refs as in-page links, the trust key, the audit head, and an
// expiry warning under 30 days.
func TestCatalogPagesShowTheStore(t *testing.T) {
	h := newHandler(t, newStore(t, hostileBundle(t)))
	checks := map[string][]string{
		"/ui/": {"org.example.translate.text", "expires within 30 days", "2.1.0"},
		"/ui/compat?name=org.example.translate.text":          {"required_added", "/required", "incompatible"},
		"/ui/version?name=org.example.translate.text&v=2.0.0": {`href="/ui/schema?b=org.example.translate&amp;k=schemas%2Fcommon%2Ftext.json`},
		"/ui/trust":                           {"example", "did:key:z", "Audit chain", "org.hostile"},
		"/ui/bundle?id=org.example.translate": {"Created", "2026-"},
		"/ui/search?q=TRANSLATE":              {"1 capabilities match", "org.example.translate.text"},
	}
	for p, wants := range checks {
		_, body := get(t, h, http.MethodGet, p)
		for _, w := range wants {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", p, w)
			}
		}
	}
	if m := h.Model(); m.Trust.AuditHead == "" || len(m.Trust.Keys) != 2 {
		t.Errorf("trust: %+v", m.Trust)
	}
}

// TestCatalogFollowsTheStoreGenerationNotEveryRequest: a bundle imported
// while the catalog serves shows after the refresh interval, not before
// (no store read per request), and a store that cannot be opened keeps
// the last model served.
func TestCatalogFollowsTheStoreGenerationNotEveryRequest(t *testing.T) {
	p := newStore(t)
	clock := testNow
	broken := false
	h, err := NewHandler(Options{Now: func() time.Time { return clock }, Open: func() (Source, error) {
		if broken {
			return nil, errors.New("store unreadable")
		}
		return opener(p)()
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := resolver.Open(p, resolver.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(hostileBundle(t)), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, body := get(t, h, http.MethodGet, "/ui/"); strings.Contains(body, "org.hostile.script") {
		t.Fatal("the store was read again before the refresh interval")
	}
	clock = clock.Add(DefaultRefresh + time.Second)
	if _, body := get(t, h, http.MethodGet, "/ui/"); !strings.Contains(body, "org.hostile.script") {
		t.Fatal("the new generation is not shown after the refresh interval")
	}
	broken = true
	clock = clock.Add(2 * DefaultMaxAge)
	if res, body := get(t, h, http.MethodGet, "/ui/"); res.StatusCode != 200 || !strings.Contains(body, "org.hostile.script") {
		t.Fatalf("an unreadable store loses the last model: %d", res.StatusCode)
	}
}
