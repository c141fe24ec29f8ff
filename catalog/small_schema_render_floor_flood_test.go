package catalog

import (
	"net/http"
	"testing"
	"time"
)

// TestSmallSchemaPagesDrainTheRenderBudget: CATALOG-26 charges
// a page's schema renderings what they took, "no floor, so a small
// schema costs what it took", but computeShare.charge took at least
// MinComputeCharge (50 ms, the matrices' floor) of every charge.
// Attack: a peer (or four, PeerShare) asks the page of a tiny schema,
// a millisecond of CPU, again and again: each is charged 50 ms, so the
// server's whole budget (one second a second) is spent by 20 tiny pages
// a second, and every honest reader's schema page is 503 for almost no
// CPU. With a clock that does not move (every rendering takes nothing),
// the third tiny page of a peer whose share is 100 ms was 429. Now the
// floor is the kind's (none for the renderings, CATALOG-27): a rendering
// that took nothing costs nothing, and every page is served.
func TestSmallSchemaPagesDrainTheRenderBudget(t *testing.T) {
	h, err := NewHandler(Options{Open: opener(newStore(t, deepBundle(t, []byte(`{"type":"object"}`)))), Now: now,
		PeerShare: 4, RenderBurst: 400 * time.Millisecond, RenderRate: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if res, _ := getFrom(t, h, "192.0.2.1:1234", departedTarget); res.StatusCode != http.StatusOK {
			t.Fatalf("tiny schema page %d that took no time: %d, want 200 (charged a floor it does not cost)", i+1, res.StatusCode)
		}
	}
}
