package catalog

import (
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNavigationOfAnotherSiteWithoutAClickCannotMakeTheCatalogWork: a
// page of another site cannot embed the catalog (CATALOG-34), but it
// can start a top-level navigation to it and stop it at once
// (location.href = URL; window.stop()), and then start the next: checked
// in chromium, a page fired 8 such navigations to a catalog page in 1.5
// s without leaving, each cross-site, navigate, document, and none with
// Sec-Fetch-User. Each had the page rendered (a matrix computed, two
// schemas rendered) on the operator's share. A top-level navigation of
// another site the user's activation did not start is now refused 403
// (cross_site_refused) before the store is read, by a page whose one
// link (fixed text) is the catalog's own address for the page asked,
// its query encoded again: one click of the user's opens it.
func TestNavigationOfAnotherSiteWithoutAClickCannotMakeTheCatalogWork(t *testing.T) {
	p := newStore(t)
	const name = "org.example.translate.text"
	long := strings.Repeat("x", maxParam+1)
	for _, c := range []struct {
		what, target, link string
	}{
		{"a compatibility page", "/ui/compat?name=" + name, "/ui/compat?name=" + name},
		{"a version page, parameters reordered and encoded again", "/ui/version?v=1.0.0&name=" + name + "&x=%3Cb%3E",
			"/ui/version?name=" + name + "&v=1.0.0&x=%3Cb%3E"},
		{"a schema page", "/ui/schema?b=org.example.translate&k=in%2Ejson", "/ui/schema?b=org.example.translate&k=in.json"},
		{"a page without a query", "/ui/trust", "/ui/trust"},
		{"no page of the catalog", "/ui/elsewhere?name=" + name, "/ui/"},
		{"a parameter longer than the pages take", "/ui/search?q=" + long, "/ui/search"},
		{"a query that does not parse", "/ui/cap?name=%zz", "/ui/cap"},
	} {
		t.Run(c.what, func(t *testing.T) {
			clock := testNow
			var opens atomic.Int64
			h, err := NewHandler(Options{Now: func() time.Time { return clock }, Open: func() (Source, error) {
				opens.Add(1)
				return opener(p)()
			}})
			if err != nil {
				t.Fatal(err)
			}
			clock = clock.Add(time.Minute) // past Refresh: a page served looks at the store
			before := opens.Load()
			for range 20 {
				req := httptest.NewRequest(http.MethodGet, c.target, nil)
				req.Header.Set("Sec-Fetch-Site", "cross-site")
				req.Header.Set("Sec-Fetch-Mode", "navigate")
				req.Header.Set("Sec-Fetch-Dest", "document")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusForbidden {
					t.Fatalf("answered %d; want 403 (%s)", rec.Code, ErrCrossSite)
				}
				body := rec.Body.String()
				href := `href="` + html.EscapeString(c.link) + `"`
				if !strings.Contains(body, href) {
					t.Fatalf("the refusal does not link %s:\n%s", href, body)
				}
				if shown := strings.Replace(body, href, "", 1); strings.Contains(shown, name) || strings.Contains(shown, long) {
					t.Errorf("the refusal shows what was sent:\n%s", shown)
				}
				if rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Security-Policy") != ContentSecurityPolicy ||
					!strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
					t.Errorf("the refusal lacks the catalog's headers: %v", rec.Header())
				}
			}
			h.Model().memo.mu.Lock()
			kept := len(h.Model().memo.kept)
			h.Model().memo.mu.Unlock()
			if opened := opens.Load() - before; opened != 0 || kept != 0 {
				t.Errorf("20 refused navigations opened the store %d times and computed %d matrices; want none", opened, kept)
			}
			// The link, followed by the user: a request of the catalog's
			// own page.
			req := httptest.NewRequest(http.MethodGet, c.link, nil)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			req.Header.Set("Sec-Fetch-Mode", "navigate")
			req.Header.Set("Sec-Fetch-Dest", "document")
			req.Header.Set("Sec-Fetch-User", "?1")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code == http.StatusForbidden {
				t.Errorf("the link followed is refused")
			}
		})
	}
}

// TestBrowserNavigationOfAnotherSiteWithoutAClickCannotMakeTheCatalogWork
// drives headless chromium: a page of another site sets its own location
// to the catalog's compatibility page and stops the navigation (the
// catalog's answer held until then), 8 times,
// without a click. Each navigation reaches the catalog (cross-site,
// navigate, document, no Sec-Fetch-User) and is refused: the matrix is
// not computed.
func TestBrowserNavigationOfAnotherSiteWithoutAClickCannotMakeTheCatalogWork(t *testing.T) {
	h := newHandler(t, newStore(t))
	const name = "org.example.translate.text"
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if r.URL.Path == Prefix+"compat" {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %s %s user=%q: %d", r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Mode"),
				r.Header.Get("Sec-Fetch-Dest"), r.Header.Get("Sec-Fetch-User"), rec.Code))
			mu.Unlock()
			// The answer is held until the page stops the navigation: a
			// loaded machine's 3 ms timer can otherwise fire after the
			// refusal arrived, and the page, navigated away, fires no more.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(3 * time.Second):
			}
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	defer srv.Close()
	target := srv.URL + "/ui/compat?name=" + url.QueryEscape(name)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!DOCTYPE html><title>elsewhere</title><script>
window.done = false;
(async () => {
  for (let i = 0; i < 8; i++) {
    location.href = "` + target + `&i=" + i;
    await new Promise(r => setTimeout(r, 100));
    window.stop();
    await new Promise(r => setTimeout(r, 50));
  }
  window.done = true;
})();
</script>`))
	}))
	defer other.Close()
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	b := startBrowser(t)
	b.open(t, elsewhere)
	for range 300 {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= 8 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	got := append([]string(nil), seen...)
	mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("chromium did not fire the navigations: %q", got)
	}
	for _, s := range got {
		if s != `cross-site navigate document user="": 403` {
			t.Errorf("a navigation without a click: %s; want refused 403", s)
		}
	}
	h.Model().memo.mu.Lock()
	_, computed := h.Model().memo.kept[name]
	h.Model().memo.mu.Unlock()
	if computed {
		t.Errorf("navigations without a click made the catalog compute a matrix (%d of them)", len(got))
	}
}
