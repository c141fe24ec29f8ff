package catalog

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageThatOpenedTheCatalogKeepsNoHandleOnIt: every answer of the
// catalog (pages, refusals, errors, the stylesheet) isolates its
// window from the page that opened it (Cross-Origin-Opener-Policy:
// same-origin). Without it, a page of another site that opened the
// catalog (window.open on a click, a link with a target) kept a handle
// on the window and could send it to one catalog address after another
// without any further click, or later anywhere else (a look-alike of
// the catalog in the operator's catalog tab).
func TestPageThatOpenedTheCatalogKeepsNoHandleOnIt(t *testing.T) {
	h := newHandler(t, newStore(t))
	for _, c := range []struct {
		what, method, target string
		header               map[string]string
	}{
		{"a page", http.MethodGet, "/ui/", nil},
		{"a HEAD of a page", http.MethodHead, "/ui/trust", nil},
		{"the stylesheet", http.MethodGet, "/ui/style.css", nil},
		{"a page not found", http.MethodGet, "/ui/nothing", nil},
		{"a method not allowed", http.MethodPost, "/ui/", nil},
		{"an image of another site", http.MethodGet, "/ui/", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}},
		{"a navigation of another site without a click", http.MethodGet, "/ui/", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}},
		{"a link of another site followed", http.MethodGet, "/ui/", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-User": "?1"}},
	} {
		req := httptest.NewRequest(c.method, c.target, nil)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("Cross-Origin-Opener-Policy"); got != "same-origin" {
			t.Errorf("%s (%d): Cross-Origin-Opener-Policy %q; want same-origin", c.what, rec.Code, got)
		}
	}
}

// TestBrowserPageThatOpenedTheCatalogKeepsNoHandleOnIt drives headless
// chromium: a page of another site opens the catalog in a window on the
// user's click, then sets that window's location to other catalog
// addresses. Without the opener policy chromium kept the window's handle
// open (closed false) and each such navigation reached the catalog
// (without Sec-Fetch-User); with it, the handle is closed once the
// catalog's page is in the window, and only the clicked navigation
// reaches the catalog. The test waits for the handle to close (a 20 s
// hang guard: without the policy it never does) rather than racing the
// catalog's load with a timer, then has the opener try its navigations.
func TestBrowserPageThatOpenedTheCatalogKeepsNoHandleOnIt(t *testing.T) {
	h := newHandler(t, newStore(t))
	var mu sync.Mutex
	var reached []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Prefix+"cap" {
			mu.Lock()
			reached = append(reached, r.URL.Query().Get("i"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	target := srv.URL + "/ui/cap?name=" + url.QueryEscape("org.example.translate.text")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!DOCTYPE html><title>elsewhere</title><button id="b">open</button><script>
window.handle = null;
document.getElementById("b").onclick = () => { window.handle = window.open("` + target + `&i=0"); };
window.again = () => {
  for (let i = 1; i <= 5; i++) {
    try { window.handle.location = "` + target + `&i=" + i; } catch (e) {}
  }
  return true;
};
</script>`))
	}))
	defer other.Close()
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	b := startBrowser(t)
	b.open(t, elsewhere)
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS("#b"))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !eval[bool](t, b, `window.handle !== null && window.handle.closed`) {
		if time.Now().After(deadline) {
			t.Fatal("the opener kept a handle on the catalog's window (closed stayed false 20 s after the click)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	eval[bool](t, b, `window.again()`)
	time.Sleep(time.Second) // a navigation the opener could still start would reach the catalog
	mu.Lock()
	got := strings.Join(reached, ",")
	mu.Unlock()
	if got != "0" {
		t.Errorf("the opener sent the catalog's window to catalog addresses %q; want only the clicked one, 0", got)
	}
}
