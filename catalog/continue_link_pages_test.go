package catalog

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
)

// TestRefusedNavigationCannotLoseThePageRouteServes: the refusal of a
// navigation of another site links the catalog's own address of the
// page asked for (CATALOG-36), and continueLink kept its own list of
// the pages, apart from route's: the index, which route serves at /ui/
// and /ui with its ?page=N, was not in it, so the link of a refused
// /ui/?page=3 was /ui/, its first page, and a page added to route and
// not to that list would have been linked as the index. Both now read
// one list (pageOf). For every page of the catalog (each template
// but the layout and the error page) and for addresses that are no
// page, route serves the address exactly when continueLink links it
// back with its query.
func TestRefusedNavigationCannotLoseThePageRouteServes(t *testing.T) {
	m := newHandler(t, newStore(t)).Model()
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	var want []string // the pages' addresses
	for _, n := range names {
		switch n = strings.TrimSuffix(path.Base(n), ".html"); n {
		case "layout", "error":
		case "index":
			want = append(want, Prefix, strings.TrimSuffix(Prefix, "/"))
		default:
			want = append(want, Prefix+n)
		}
	}
	if len(want) < 10 {
		t.Fatalf("found %d pages in the templates: %q", len(want), want)
	}
	pagesSeen := map[string]bool{}
	for _, p := range want {
		pagesSeen[p] = true
	}
	noPage := []string{Prefix + "style.css", Prefix + "nope", Prefix + "index", Prefix + "error", Prefix + "layout",
		Prefix + "bundle/", "/UI/cap", Prefix + "/bundles", "/", "/elsewhere"}
	const query = "page=2&z=%3Cb%3E"
	refusal := func(p string) *http.Request {
		req := httptest.NewRequest(http.MethodHead, "http://127.0.0.1"+p+"?"+query, nil)
		req.URL.Path = p // as sent, not cleaned
		return req
	}
	for _, p := range append(want, noPage...) {
		_, data, _ := route(m, refusal(p), nil)
		served := data.Err != "no such page"
		link := continueLink(refusal(p))
		linked := link == p+"?"+query
		if served != pagesSeen[p] {
			t.Errorf("%s: route serves it %v; want %v", p, served, pagesSeen[p])
		}
		if served != linked {
			t.Errorf("%s: route serves it %v, but continueLink links %q (want it linked back with its query exactly when served)", p, served, link)
		}
		if !served && link != Prefix {
			t.Errorf("%s: no page, linked as %q; want the index %s", p, link, Prefix)
		}
	}
}
