package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// TestKeptMatrixPageRendersFree: a matrix already kept costs
// nothing from the comparisons' budget (CATALOG-18), but its page is
// built and executed on every request: the findings of every cell, up
// to MaxRenderBytes of them, through the template by reflection. Review
// 90 measured the kept compare page of a 32-version hostile matrix at a
// quarter of a second of CPU and 280,000 allocations (12 MB) a request,
// as much as the version page of a hostile schema, which is charged to
// the renderings' budget (CATALOG-26); the compare page was charged to
// nothing, and never streams, so a peer asking it again and again, or
// asking it and leaving, kept a core of each of its page slots busy with
// no bound but the slots. Now the compare page of a kept matrix is
// rendered within the renderings' budget as a schema page is
// (CATALOG-30): past the peer's share, 429 render_share_spent with
// Retry-After, while another peer is still served.
func TestKeptMatrixPageRendersFree(t *testing.T) {
	clock := &wallClock{}
	// A peer's share of the renderings: 1/100 of two seconds, 20 ms,
	// refilled at a millisecond a second; a hostile compare page takes
	// tens of milliseconds at least.
	h, err := NewHandler(Options{Open: opener(newStore(t, flippingMatrixBundle(t, 8, 1000))), Now: clock.Now,
		PeerShare: 100, RenderBurst: 2 * time.Second, RenderRate: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	const flooder, other = "192.0.2.1:1234", "198.51.100.7:1234"
	const target = "/ui/compat?name=org.hostile.matrix"
	if res, _ := getFrom(t, h, other, target); res.StatusCode != http.StatusOK {
		t.Fatalf("the compare page (matrix computed): %d", res.StatusCode)
	}
	clock.Add(time.Hour) // the other's renderings are back; the matrix is kept
	refused := false
	for range 10 {
		res, _ := getFrom(t, h, flooder, target)
		if res.StatusCode == http.StatusTooManyRequests {
			retryAfter(t, res)
			refused = true
			break
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("kept compare page: %d", res.StatusCode)
		}
	}
	if !refused {
		t.Fatalf("a peer rendered the kept compare page of a hostile matrix 10 times within a render share of 20 ms: it is charged to nothing")
	}
	if res, _ := getFrom(t, h, other, target); res.StatusCode != http.StatusOK {
		t.Errorf("another peer is refused (%d) with the flooder", res.StatusCode)
	}
}

// TestComparePagesNotWrittenGiveBackTheirRendering: a compare page is
// admitted to the renderings' budget before its page is executed
// (CATALOG-30); a HEAD, whose page is not executed, or a client gone
// before it is, must give its place back, else a peer's few HEADs would
// hold every rendering place of the server for good and every schema
// and compare page would be refused. (A HEAD is no longer admitted at
// all, CATALOG-39; a GET whose client is gone still is.)
func TestComparePagesNotWrittenGiveBackTheirRendering(t *testing.T) {
	h := newHandler(t, newStore(t, flippingMatrixBundle(t, 2, 10)))
	const target = "/ui/compat?name=org.hostile.matrix"
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		for i := range 2 * DefaultMaxInFlight {
			rec := httptest.NewRecorder()
			r := httptest.NewRequestWithContext(gone, method, target, nil)
			if method == http.MethodHead {
				r = r.WithContext(context.Background())
			}
			r.RemoteAddr = "192.0.2." + strconv.Itoa(i%4+1) + ":1"
			aborted := serveAbortable(h, rec, r)
			if method == http.MethodHead && rec.Code != http.StatusOK || method == http.MethodGet && !aborted {
				t.Fatalf("%s %d of the compare page: %d, aborted %v", method, i, rec.Code, aborted)
			}
		}
		if res, _ := getFrom(t, h, "198.51.100.7:1", target); res.StatusCode != http.StatusOK {
			t.Fatalf("the compare page after %d %ss not written: %d, want 200", 2*DefaultMaxInFlight, method, res.StatusCode)
		}
	}
}
