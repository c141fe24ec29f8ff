package catalog

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stepClock is a clock the test moves.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// getFrom is get, from the address remote.
func getFrom(t *testing.T, h http.Handler, remote, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.RemoteAddr = remote
	h.ServeHTTP(rec, r)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// retryAfter is the whole seconds of a refusal's Retry-After, or fails.
func retryAfter(t *testing.T, res *http.Response) time.Duration {
	t.Helper()
	n, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || n < 1 {
		t.Fatalf("a %d refusal has Retry-After %q, want whole seconds", res.StatusCode, res.Header.Get("Retry-After"))
	}
	return time.Duration(n) * time.Second
}

// TestPeerAskingManyMatricesCannotTakeEveryComparison: any anonymous
// peer names which matrix /ui/compat computes, each up to
// DefaultMaxMatrixSteps comparisons (seconds of CPU), and asking for a
// different capability each time made the server compute every one, as
// fast as the peer asked (four at once). The computations one address
// starts now share a budget of compute time (the floor of a computation
// counted at least): past it, 429 with Retry-After and a fixed message,
// while another address is still served; once the Retry-After has
// passed, the peer is served again. A matrix already kept costs nothing.
func TestPeerAskingManyMatricesCannotTakeEveryComparison(t *testing.T) {
	const caps = 400
	clock := &stepClock{t: testNow}
	h, err := NewHandler(Options{Open: opener(newStore(t, manyBundle(t, caps))), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const flooder, other = "192.0.2.1:4000", "198.51.100.7:5000"
	refusedAt := -1
	var refusal *http.Response
	for i := range caps {
		res, body := getFrom(t, h, flooder, "/ui/compat?name="+manyName(i))
		if res.StatusCode == http.StatusOK {
			continue
		}
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("matrix %d: status %d, want 200 or 429", i, res.StatusCode)
		}
		if strings.Contains(body, manyName(i)) {
			t.Errorf("the refusal echoes the name asked for")
		}
		refusedAt, refusal = i, res
		break
	}
	if refusedAt < 0 {
		t.Fatalf("one address made the server compute %d matrices in a row at one instant, each up to %d comparisons, "+
			"and was never refused", caps, DefaultMaxMatrixSteps)
	}
	wait := retryAfter(t, refusal)
	// A matrix already computed is served to the flooder: it costs no
	// comparison.
	if res, _ := getFrom(t, h, flooder, "/ui/compat?name="+manyName(0)); res.StatusCode != http.StatusOK {
		t.Errorf("a kept matrix is refused to a peer over its share: %d", res.StatusCode)
	}
	if res, _ := getFrom(t, h, other, "/ui/compat?name="+manyName(refusedAt)); res.StatusCode != http.StatusOK {
		t.Errorf("another address is refused (%d) once one address spent its share", res.StatusCode)
	}
	if res, _ := getFrom(t, h, flooder, "/ui/compat?name="+manyName(refusedAt+1)); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the flooder is served (%d) before its Retry-After", res.StatusCode)
	}
	clock.Add(wait)
	if res, _ := getFrom(t, h, flooder, "/ui/compat?name="+manyName(refusedAt+1)); res.StatusCode != http.StatusOK {
		t.Errorf("the flooder is still refused (%d) after its Retry-After of %v", res.StatusCode, wait)
	}
}

// TestManyPeersCannotTakeMoreThanTheServersComparisons: a peer's share
// bounds one address, but many addresses (an IPv6 /48 is 65,536 peers)
// each within its share would still make the server compute without
// bound. The server's budget is one for all: past it, 503 with
// Retry-After and a fixed message, to every peer, until it refills.
func TestManyPeersCannotTakeMoreThanTheServersComparisons(t *testing.T) {
	const caps = 40
	clock := &stepClock{t: testNow}
	// Eight computations at once in all, two a peer (PeerShare 4).
	h, err := NewHandler(Options{Open: opener(newStore(t, manyBundle(t, caps))), Now: clock.Now,
		ComputeBurst: 8 * MinComputeCharge})
	if err != nil {
		t.Fatal(err)
	}
	served, i := 0, 0
	var refusal *http.Response
	for p := 0; refusal == nil && p < caps/2; p++ {
		remote := "[2001:db8:0:" + strconv.Itoa(p) + "::1]:443"
		for range 2 {
			res, body := getFrom(t, h, remote, "/ui/compat?name="+manyName(i))
			i++
			switch res.StatusCode {
			case http.StatusOK:
				served++
				continue
			case http.StatusServiceUnavailable:
				if !strings.Contains(body, "comparisons are spent for now") {
					t.Errorf("the 503 does not say the comparisons are spent")
				}
				refusal = res
			default:
				t.Fatalf("peer %d: status %d, want 200 or 503", p, res.StatusCode)
			}
			break
		}
	}
	if refusal == nil {
		t.Fatalf("%d addresses within their shares made the server compute %d matrices at one instant, over its budget of 8", caps/2, served)
	}
	// Six to the first three peers bring the total down to its reserve
	// (a quarter, CATALOG-28); the fourth peer is a /64 of the same /48
	// as the three heavy ones, not a light peer (CATALOG-32): refused.
	if served != 6 {
		t.Errorf("the server computed %d matrices before refusing, want 6 (its budget of 8 less the reserve, which no /64 of the heavy peers' /48 takes)", served)
	}
	clock.Add(retryAfter(t, refusal))
	if res, _ := getFrom(t, h, "203.0.113.9:1", "/ui/compat?name="+manyName(i)); res.StatusCode != http.StatusOK {
		t.Errorf("a new peer is refused (%d) after the server's Retry-After", res.StatusCode)
	}
}

// TestPeersCyclingAddressesCannotGrowTheComputeTable: each peer that
// starts a computation gets a bucket; a peer cycling through addresses
// would grow the table without bound. It holds at most maxComputePeers:
// a bucket full again with nothing running is forgotten, and past the
// bound a new peer is refused as the server's until one is.
func TestPeersCyclingAddressesCannotGrowTheComputeTable(t *testing.T) {
	clock := &stepClock{t: testNow}
	c := newComputeShare(compareKind, clock.Now, time.Duration(maxComputePeers+10)*time.Hour, 1, 1, 1)
	for p := range maxComputePeers {
		peer := "peer" + strconv.Itoa(p)
		if no := c.admit(peer); no != nil {
			t.Fatalf("peer %d refused: %s", p, no.name)
		}
		c.charge(peer, 0)
	}
	if no := c.admit("one more"); no == nil || no.status != http.StatusServiceUnavailable {
		t.Fatalf("a peer past the %d tracked was admitted (%v)", maxComputePeers, no)
	}
	if len(c.peers) > maxComputePeers || len(c.networks) > maxComputePeers {
		t.Fatalf("the tables hold %d peers and %d networks, over %d", len(c.peers), len(c.networks), maxComputePeers)
	}
	clock.Add(MinComputeCharge)
	if no := c.admit("one more"); no != nil {
		t.Fatalf("a new peer is refused (%s) once the others' buckets are full again", no.name)
	}
	if len(c.peers) != 1 {
		t.Errorf("the table holds %d peers after forgetting the full ones, want 1", len(c.peers))
	}
}

// TestPeerCannotHoldManyMatrixComputationsAtOnce: a computation holds
// every schema it parses while it runs (a tree many times the schema's
// text, up to 32 versions' worth), and each page slot of a peer could run
// one: 16 at once held GiBs. At most MaxComputing run at once in all,
// and 1/PeerShare of them (at least one) for a peer; past either, 429 or
// 503 with a Retry-After of a second, and a computation that ends frees
// its place.
func TestPeerCannotHoldManyMatrixComputationsAtOnce(t *testing.T) {
	clock := &stepClock{t: testNow}
	c := newComputeShare(compareKind, clock.Now, time.Hour, 1, 4, 4)
	if no := c.admit("a"); no != nil {
		t.Fatalf("a first computation is refused: %s", no.name)
	}
	no := c.admit("a")
	if no == nil || no.status != http.StatusTooManyRequests || no.retry != time.Second {
		t.Fatalf("a peer started a second computation at once (refusal %+v), over its share of one", no)
	}
	for _, p := range []string{"b", "c", "d"} {
		if no := c.admit(p); no != nil {
			t.Fatalf("peer %s refused: %s", p, no.name)
		}
	}
	if no := c.admit("e"); no == nil || no.status != http.StatusServiceUnavailable {
		t.Fatalf("a fifth computation started at once (refusal %+v), over the 4 in all", no)
	}
	c.charge("a", 0)
	if no := c.admit("e"); no != nil {
		t.Fatalf("a computation that ended did not free its place: %s", no.name)
	}
	if no := c.admit("a"); no == nil {
		t.Fatalf("the peer that ended one started another while 4 run")
	}
}
