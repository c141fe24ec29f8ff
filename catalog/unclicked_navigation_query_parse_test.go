package catalog

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUnclickedNavigationCannotMakeTheRefusalParseAQueryItDrops: a
// navigation of another site without a click is refused before a page
// slot is taken (CATALOG-36), and its refusal's link drops a query over
// maxContinue; but continueLink parsed the whole query first, every
// parameter unescaped and kept in a map, and only then looked at its
// length: a query of 4,000 parameters (32,000 bytes, within the agent's
// 64 KiB of headers) cost the refusal 4,162 allocations where one of
// 4,105 bytes cost 113, on no peer's share. The length is now judged first: the refusal of that
// navigation allocates what the refusal of one with a short query does.
func TestUnclickedNavigationCannotMakeTheRefusalParseAQueryItDrops(t *testing.T) {
	h := newHandler(t, newStore(t))
	var long strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&long, "p%04d=v&", i)
	}
	refused := func(target string) float64 {
		return testing.AllocsPerRun(10, func() {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			req.Header.Set("Sec-Fetch-Mode", "navigate")
			req.Header.Set("Sec-Fetch-Dest", "document")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `href="/ui/cap"`) {
				t.Fatalf("answered %d; want 403 linking /ui/cap", rec.Code)
			}
		})
	}
	over := "x=1&name=" + strings.Repeat("n", maxContinue)
	short := refused("/ui/cap?" + over)
	got := refused("/ui/cap?" + long.String())
	if got > short+64 {
		t.Errorf("the refusal of a navigation whose %d-byte query it drops allocated %.0f times, one whose %d-byte query it drops %.0f: it parses what it drops",
			long.Len(), got, len(over), short)
	}
}
