package catalog

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// wallClock is the real clock, moved on by the test: a rendering takes
// its real time, a Retry-After is waited out at once.
type wallClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *wallClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *wallClock) Add(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// TestPeerRenderingHostileSchemasIsRefusedPastItsShare: any peer names
// which schema a page renders, and the version page of a hostile schema
// costs a quarter of a second of CPU; a peer asking it again and again
// (or asking it and leaving, CATALOG-26) took a core of each of its page
// slots, with no bound but the slots. The pages' schema renderings now
// take their time from a budget, in all and by peer, as the matrices'
// comparisons do (CATALOG-18): past its share, 429 with Retry-After and
// a fixed message, while another peer is served, and so are the peer's
// pages without a schema; once the Retry-After passed, the peer is
// served again.
func TestPeerRenderingHostileSchemasIsRefusedPastItsShare(t *testing.T) {
	clock := &wallClock{}
	// A peer's share: 1/1000 of twenty seconds, 20 ms, refilled at a
	// millisecond a second; a hostile version page takes far more. The
	// total is wide, so that the flooder's one page (seconds under the
	// race detector on a loaded machine) leaves the other peer its page.
	h, err := NewHandler(Options{Open: opener(newStore(t, deepBundle(t, manyMembersSchema(30000)))), Now: clock.Now,
		PeerShare: 1000, RenderBurst: 20 * time.Second, RenderRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	const flooder, other = "192.0.2.1:1234", "198.51.100.7:1234"
	if res, _ := getFrom(t, h, flooder, departedTarget); res.StatusCode != http.StatusOK {
		t.Fatalf("the first hostile page: %d", res.StatusCode)
	}
	res, body := getFrom(t, h, flooder, departedTarget)
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "share of the schema renderings") || strings.Contains(body, `class="schema"`) {
		t.Fatalf("the second hostile page past the peer's share: %d, want 429 and the refusal alone", res.StatusCode)
	}
	wait := retryAfter(t, res)
	if res, _ := getFrom(t, h, flooder, Prefix); res.StatusCode != http.StatusOK {
		t.Errorf("a page without a schema is refused (%d) with the peer's renderings", res.StatusCode)
	}
	if res, _ := getFrom(t, h, other, departedTarget); res.StatusCode != http.StatusOK {
		t.Errorf("another peer is refused (%d) with the flooder", res.StatusCode)
	}
	clock.Add(wait)
	if res, _ := getFrom(t, h, flooder, departedTarget); res.StatusCode != http.StatusOK {
		t.Errorf("the flooder is still refused (%d) after its Retry-After of %v", res.StatusCode, wait)
	}
}
