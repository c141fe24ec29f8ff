package catalog

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBrowserPageOfAnotherSiteCannotMakeTheCatalogWork drives headless
// chromium: a page of another site (http://localhost:PORT, where the
// catalog is http://127.0.0.1:PORT) holds an image and a frame of the
// catalog's compatibility page. Chromium sends them with Sec-Fetch-Site
// cross-site; the catalog refuses both before the store is read, so the
// matrix is not computed. A link of that page followed (a top-level
// navigation) is still served.
func TestBrowserPageOfAnotherSiteCannotMakeTheCatalogWork(t *testing.T) {
	h := newHandler(t, newStore(t))
	const name = "org.example.translate.text"
	var mu sync.Mutex
	var sites []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Prefix+"compat" {
			mu.Lock()
			sites = append(sites, r.Header.Get("Sec-Fetch-Site")+" "+r.Header.Get("Sec-Fetch-Dest"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	target := srv.URL + "/ui/compat?name=" + url.QueryEscape(name)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!DOCTYPE html><title>elsewhere</title><img src="` + target + `"><iframe src="` + target + `"></iframe><a id="l" href="` + target + `">catalog</a>`))
	}))
	defer other.Close()
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	b := startBrowser(t)
	b.open(t, elsewhere)
	for deadline := 0; deadline < 100; deadline++ {
		mu.Lock()
		n := len(sites)
		mu.Unlock()
		if n >= 2 && eval[bool](t, b, `document.images[0].complete`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	seen := strings.Join(sites, ", ")
	mu.Unlock()
	if !strings.Contains(seen, "cross-site image") || !strings.Contains(seen, "cross-site iframe") {
		t.Fatalf("chromium did not send the subresources as cross-site: %q", seen)
	}
	h.Model().memo.mu.Lock()
	_, computed := h.Model().memo.kept[name]
	h.Model().memo.mu.Unlock()
	if computed {
		t.Errorf("a page of another site made the catalog compute a matrix (%s)", seen)
	}
	if code := b.open(t, target); code != http.StatusOK {
		t.Errorf("the catalog opened directly: status %d", code)
	}
}
