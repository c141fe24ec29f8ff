package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// TestHeadOrAbandonedPageCannotRenderAHostileSchema: a
// publisher's schema of 30,000 small members (240 KB, accepted by
// import) renders to 1 MiB, twice on its version page. Attack: a browser
// user (or any peer) sends HEAD for that page, or sends GET and closes
// the connection at once, again and again on its four page slots. Today
// the handler pretty-prints both schemas and executes the whole template
// before it looks at the method or the client: each such request costs
// about 64 MB allocated and 1.7 million allocations (a quarter of a
// second of CPU and more) for zero bytes read, so one peer keeps four
// cores busy. It should render nothing for HEAD (the status and headers
// need no body), and nothing once the client went away: a few hundred KB
// allocated at most (the route's look-ups), bounded here at 1 MiB.
func TestHeadOrAbandonedPageCannotRenderAHostileSchema(t *testing.T) {
	h := newHandler(t, newStore(t, deepBundle(t, manyMembersSchema(30000))))
	const target = "/ui/version?name=org.hostile.deep&v=1.0.0"
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		req  func() *http.Request
	}{
		{"HEAD", func() *http.Request { return httptest.NewRequest(http.MethodHead, target, nil) }},
		{"GET of a client gone", func() *http.Request {
			return httptest.NewRequest(http.MethodGet, target, nil).WithContext(gone)
		}},
	} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rec := httptest.NewRecorder()
		serveAbortable(h, rec, tc.req())
		runtime.ReadMemStats(&after)
		if tc.name == "HEAD" && rec.Code != http.StatusOK {
			t.Fatalf("HEAD: status %d", rec.Code)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("%s of the version page of a hostile schema allocated %d MB (%d allocations) for no byte read: the page was rendered",
				tc.name, got>>20, after.Mallocs-before.Mallocs)
		}
	}
}
