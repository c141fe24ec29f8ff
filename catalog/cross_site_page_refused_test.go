package catalog

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPageOfAnotherSiteCannotMakeTheCatalogWork: the catalog sits on
// the operator's loopback (or a site's network), and any web page the
// operator's browser shows can point an image, a frame, a stylesheet or
// a fetch at it (the Host is the catalog's own: the DNS rebinding guard
// lets it through). The browser reads the answer to its end and then
// throws it away, so each such request had a compatibility matrix
// computed, or a schema rendered, charged to the operator's own address,
// and its timing told the page what the store holds. A request a
// document of another origin made for anything but a top-level
// navigation (Fetch Metadata) is now 403 before the store is read: no
// store opened, no matrix computed. A top-level navigation (a link
// followed), the catalog's own requests, the user's own (none) and
// clients that send no Fetch Metadata are served as before.
func TestPageOfAnotherSiteCannotMakeTheCatalogWork(t *testing.T) {
	p := newStore(t)
	const name = "org.example.translate.text"
	for _, c := range []struct {
		what, site, mode, dest string
		refused                bool
		purpose                string // Sec-Purpose
	}{
		{"an image of another site", "cross-site", "no-cors", "image", true, ""},
		{"a frame of another site", "cross-site", "navigate", "iframe", true, ""},
		{"a fetch of another site", "cross-site", "cors", "empty", true, ""},
		{"a stylesheet of another site", "cross-site", "no-cors", "style", true, ""},
		{"an image of the same site, another port", "same-site", "no-cors", "image", true, ""},
		{"an object of another site", "cross-site", "navigate", "object", true, ""},
		{"an unknown Sec-Fetch-Site", "elsewhere", "no-cors", "image", true, ""},
		{"a link of another site followed", "cross-site", "navigate", "document", false, ""},
		{"a link of a same-site page followed", "same-site", "navigate", "document", false, ""},
		{"a navigation of another site without a click", "cross-site", "navigate", "document", true, ""},
		{"a navigation of a same-site page without a click", "same-site", "navigate", "document", true, ""},
		{"the catalog's own link", "same-origin", "navigate", "document", false, ""},
		{"the catalog's own stylesheet request", "same-origin", "no-cors", "style", false, ""},
		{"an address typed by the user", "none", "navigate", "document", false, ""},
		{"a client without Fetch Metadata", "", "", "", false, ""},
		{"a speculation-rules prefetch of another site", "cross-site", "navigate", "document", true, "prefetch"},
		{"a prerender of another site", "cross-site", "navigate", "document", true, "prefetch;prerender"},
		{"the catalog's own prefetch", "same-origin", "navigate", "document", false, "prefetch"},
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
			req := httptest.NewRequest(http.MethodGet, "/ui/compat?name="+name, nil)
			user := ""
			if strings.HasPrefix(c.what, "a link of") {
				user = "?1" // a link the user followed (CATALOG-36)
			}
			for k, v := range map[string]string{"Sec-Fetch-Site": c.site, "Sec-Fetch-Mode": c.mode, "Sec-Fetch-Dest": c.dest, "Sec-Purpose": c.purpose, "Sec-Fetch-User": user} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			h.Model().memo.mu.Lock()
			_, computed := h.Model().memo.kept[name]
			h.Model().memo.mu.Unlock()
			opened := opens.Load() > before
			if !c.refused {
				if rec.Code != http.StatusOK || !computed || !opened {
					t.Errorf("served %d, matrix computed %v, store looked at %v; want 200, true, true", rec.Code, computed, opened)
				}
				return
			}
			if rec.Code != http.StatusForbidden || computed || opened {
				t.Errorf("%s: answered %d, matrix computed %v, store opened %v; want 403 before the store is read (%s)",
					c.what, rec.Code, computed, opened, ErrCrossSite)
			}
			if body := rec.Body.String(); !strings.HasSuffix(c.what, "without a click") && (strings.Contains(body, name) || strings.Contains(body, c.dest)) {
				t.Errorf("the refusal echoes the request: %q", body)
			}
			if rec.Header().Get("X-Frame-Options") != "DENY" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("the refusal lacks the catalog's headers: %v", rec.Header())
			}
		})
	}
}

// TestSearchBoxCannotShowAHiddenCharacterOfALink: a link to
// /ui/search?q=... put its query back in the search box as sent, the one
// text of a page that was neither cleaned nor cut: a right-to-left
// override, a zero-width or filler character in a link made the box on
// the operator's origin read otherwise than what it holds. The box now
// shows the query as every other shown text is shown (clean).
func TestSearchBoxCannotShowAHiddenCharacterOfALink(t *testing.T) {
	h := newHandler(t, newStore(t))
	for _, c := range []struct {
		what, q, shown string
		hidden         rune
	}{
		{"a right-to-left override", "\u202etxet", `\u202etxet`, 0x202e},
		{"a zero-width space", "trans\u200blate", `trans\u200blate`, 0x200b},
		{"a Hangul filler", "\u3164translate", `\u3164translate`, 0x3164},
		{"an escape character", "a\x1bb", `a\u001bb`, 0x1b},
	} {
		res, body := get(t, h, http.MethodGet, "/ui/search?q="+url.QueryEscape(c.q))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", c.what, res.StatusCode)
		}
		if strings.ContainsRune(body, c.hidden) || !strings.Contains(body, `value="`+c.shown+`"`) {
			t.Errorf("%s: the search box holds the query as sent, not as %q", c.what, c.shown)
		}
	}
}
