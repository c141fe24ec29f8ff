package catalog

import (
	"context"
	"flag"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// screenshots, when set, is the folder the browser test writes the
// screenshots of the main pages to (docs/screenshots from the repository
// root: go test ./catalog -run Browser -args -screenshots ../docs/screenshots).
var screenshots = flag.String("screenshots", "", "write screenshots of the main catalog pages to this folder")

// chromiumPath finds Debian's chromium; the test fails without it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: run scripts/ci-chromium.sh (installs Debian's chromium)")
	return ""
}

// browser starts headless chromium with a temporary profile and records
// every request the pages make and every dialog they open.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	dialogs  []string
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	// The browser is started by the first action, alone: chromedp v0.23.0
	// closes a channel twice (a panic) when a context whose browser
	// failed to start is asked to start it again, so a failed start is
	// never retried on its context; a fresh allocator gets one more try
	// (a browser starting on a loaded machine can exit early).
	var ctx context.Context
	var err error
	for try := 0; try < 2; try++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, chromedp.UserDataDir(t.TempDir()))...)
		c, cancel := chromedp.NewContext(actx)
		c, cancelTimeout := context.WithTimeout(c, 3*time.Minute)
		t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
		if err = chromedp.Do(c, chromedp.Navigate("about:blank")); err == nil {
			ctx = c
			break
		}
		cancelTimeout()
		cancel()
		cancelAlloc()
	}
	if ctx == nil {
		t.Fatalf("chromium does not start (run scripts/ci-chromium.sh): %v", err)
	}
	b := &browser{ctx: ctx}
	reqs := chromedp.Events(ctx, network.RequestWillBeSent)
	dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range reqs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.requests = append(b.requests, ev.Request.URL)
			b.mu.Unlock()
		}
	}()
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return b
}

// open navigates to u and returns the HTTP status of the page.
func (b *browser) open(t *testing.T, u string) int64 {
	t.Helper()
	res, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(u))
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	if res == nil {
		t.Fatalf("%s: no response", u)
	}
	return res.Status
}

func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// TestBrowserCatalogCrawlSearchHostileAndOrigin drives headless chromium
// against a served store: every page reached from the index renders
// (200, a heading, no script element), every link and in-page anchor
// resolves, the search form finds a capability, a hostile summary neither
// runs nor changes the page, Tab reaches the search box, and no request
// leaves the page's origin.
func TestBrowserCatalogCrawlSearchHostileAndOrigin(t *testing.T) {
	h := newHandler(t, newStore(t, hostileBundle(t)))
	srv := httptest.NewServer(h)
	defer srv.Close()
	b := startBrowser(t)

	seen := map[string]bool{}
	fragments := map[string][]string{} // the anchors links expect on a page
	queue := []string{srv.URL + Prefix}
	for len(queue) > 0 && len(seen) < 300 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		if code := b.open(t, u); code != 200 {
			t.Errorf("%s: status %d", u, code)
			continue
		}
		if n := eval[int](t, b, `document.scripts.length + document.querySelectorAll("img,svg,iframe,object,embed").length`); n != 0 {
			t.Errorf("%s: %d script or embedded elements", u, n)
		}
		if h1 := eval[string](t, b, `(document.querySelector("h1")||{}).textContent||""`); h1 == "" {
			t.Errorf("%s: no heading", u)
		}
		for _, f := range fragments[u] {
			if !eval[bool](t, b, `!!document.getElementById(`+strconvQuote(f)+`)`) {
				t.Errorf("%s: a link expects the anchor #%s, which is not there", u, f)
			}
		}
		broken := eval[[]string](t, b, `[...document.querySelectorAll('a[href^="#"]')].map(a=>a.getAttribute("href")).filter(h=>!document.getElementById(decodeURIComponent(h.slice(1))))`)
		if len(broken) > 0 {
			t.Errorf("%s: anchors without a target: %v", u, broken)
		}
		for _, l := range eval[[]string](t, b, `[...document.querySelectorAll("a[href]")].map(a=>a.href)`) {
			lu, err := url.Parse(l)
			if err != nil || lu.Scheme+"://"+lu.Host != srv.URL {
				t.Errorf("%s: a link leaves the origin: %q", u, l)
				continue
			}
			if lu.Fragment != "" {
				frag := lu.Fragment
				lu.Fragment = ""
				fragments[lu.String()] = append(fragments[lu.String()], frag)
			}
			if !seen[lu.String()] {
				queue = append(queue, lu.String())
			}
		}
	}
	t.Logf("crawled %d pages", len(seen))
	if len(seen) < 15 || len(fragments) == 0 {
		t.Errorf("the crawl reached only %d pages", len(seen))
	}

	// The hostile summary: shown, inert.
	b.open(t, srv.URL+"/ui/version?name=org.hostile.script&v=1.0.0")
	if title := eval[string](t, b, `document.title`); strings.Contains(title, "pwned") {
		t.Errorf("the hostile script ran: title %q", title)
	}
	if txt := eval[string](t, b, `document.querySelector(".notes").textContent`); !strings.Contains(txt, "<script>document.title") {
		t.Errorf("the hostile notes are not shown as text: %q", txt)
	}

	// Keyboard: Tab from the top reaches the search box; typing a name
	// and Enter searches.
	b.open(t, srv.URL+Prefix)
	reached := false
	for range 8 {
		if err := chromedp.Do(b.ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		if eval[string](t, b, `document.activeElement.id`) == "q" {
			reached = true
			break
		}
	}
	if !reached {
		t.Fatal("Tab never reaches the search box")
	}
	if err := chromedp.Do(b.ctx, chromedp.KeyEvent("translate"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`p[role="status"]`))); err != nil {
		t.Fatal(err)
	}
	if loc := eval[string](t, b, `location.pathname+location.search`); loc != "/ui/search?q=translate" {
		t.Errorf("search went to %q", loc)
	}
	if txt := eval[string](t, b, `document.querySelector("main").textContent`); !strings.Contains(txt, "org.example.translate.text") {
		t.Errorf("search does not find the capability: %q", txt)
	}

	if *screenshots != "" {
		shoot(t, b, srv.URL, *screenshots)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("dialogs opened: %v", b.dialogs)
	}
	for _, r := range b.requests {
		if !strings.HasPrefix(r, srv.URL+"/") && r != "about:blank" {
			t.Errorf("a request left the origin: %q", r)
		}
	}
	if len(b.requests) < len(seen) {
		t.Errorf("the network events saw %d requests for %d pages", len(b.requests), len(seen))
	}
}

// shoot writes the screenshots of the main pages to dir.
func shoot(t *testing.T, b *browser, base, dir string) {
	t.Helper()
	for name, path := range map[string]string{
		"index":   Prefix,
		"version": "/ui/version?name=org.example.translate.text&v=2.0.0",
		"compat":  "/ui/compat?name=org.example.translate.text",
		"trust":   "/ui/trust",
	} {
		b.open(t, base+path)
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// strconvQuote is s as a JavaScript string literal.
func strconvQuote(s string) string { return strconv.Quote(s) }
