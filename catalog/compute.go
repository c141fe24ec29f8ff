package catalog

import (
	"net/http"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// A matrix the pages compute costs up to DefaultMaxMatrixSteps
// comparisons (seconds of CPU), and any peer names which one, so the
// computations the pages start take their time from a budget (a token
// bucket of compute time, in all and by peer): a computation starts only
// while neither its peer's bucket nor the server's is spent, and once it
// ends its time (at least MinComputeCharge) is taken from both, so that a
// peer may run into debt by the computations it had running. A matrix
// already kept (computed by anyone) costs nothing. Peers are those of
// the page slots: transport.Peer of the connection's address (an IPv4
// address, an IPv6 /64); X-Forwarded-For is never read, and behind a
// proxy (one address) the server's --peer-share of 1 gives that address
// the whole budget.

// Error names of the refusals of the pages' computations: the matrices'
// comparisons (CATALOG-18) and the renderings of schemas and kept
// matrices' findings (CATALOG-26, CATALOG-30).
const (
	// ErrCompareShare: the peer's share of the comparisons is spent for
	// now (429, retryable).
	ErrCompareShare amp.ErrName = "compare_share_spent"
	// ErrCompareBudget: the server's comparisons are spent for now (503,
	// retryable).
	ErrCompareBudget amp.ErrName = "compare_budget_spent"
	// ErrRenderShare: the peer's share of the schema renderings is spent
	// for now (429, retryable).
	ErrRenderShare amp.ErrName = "render_share_spent"
	// ErrRenderBudget: the server's schema renderings are spent for now
	// (503, retryable).
	ErrRenderBudget amp.ErrName = "render_budget_spent"
)

// Bounds of the compute time of the matrices the pages compute, and of
// the time the pages spend rendering schemas and kept matrices' findings
// (CATALOG-30).
const (
	// DefaultComputeBurst is the compute time the matrices may take at
	// once, all peers together; one peer's is 1/PeerShare of it.
	DefaultComputeBurst = time.Minute
	// DefaultComputeRate is the compute time the matrices may take
	// sustained, in seconds per second of the clock (one core), all peers
	// together; one peer's is 1/PeerShare of it.
	DefaultComputeRate = 1.0
	// DefaultMaxComputing bounds the matrices computed at once, all peers
	// together (each holds the schemas it parses while it runs); one peer
	// computes at most 1/PeerShare of them (at least one).
	DefaultMaxComputing = 4
	// MinComputeCharge is the least a computation costs, however fast:
	// with it a peer's burst also bounds how many it starts.
	MinComputeCharge = 50 * time.Millisecond
	// DefaultRenderBurst is the rendering time the schemas of the pages
	// may take at once, all peers together; one peer's is 1/PeerShare of
	// it.
	DefaultRenderBurst = time.Minute
	// DefaultRenderRate is the rendering time the schemas of the pages
	// may take sustained, in seconds per second of the clock (one core),
	// all peers together; one peer's is 1/PeerShare of it.
	DefaultRenderRate = 1.0
	// maxComputePeers bounds the peers whose buckets are tracked, and
	// their networks; a full bucket with nothing running is forgotten
	// (it is as a new one), and a new peer past the bound is refused as
	// the server's.
	maxComputePeers = 4096
	// reserveShare: the last 1/reserveShare of the total (its burst) is
	// a reserve that only light peers take, when there are several
	// peers (PeerShare over 1, CATALOG-28).
	reserveShare = 4
	// lightShare: a peer is light while it and its network each used at
	// most 1/lightShare of a peer's burst (its bucket refilled to the
	// clock) and its network has nothing running (CATALOG-31,
	// CATALOG-32).
	lightShare = 16
)

// Fixed texts of the refusals: they quote nothing a peer sent.
const (
	compareShareText  = "this address has used its share of the comparisons for now; try again later"
	compareBudgetText = "the server's comparisons are spent for now; try again later"
	renderShareText   = "this address has used its share of the schema renderings for now; try again later"
	renderBudgetText  = "the server's schema renderings are spent for now; try again later"
)

// shareKind is what a computeShare bounds: the names and texts of its
// refusals, and the least one admitted costs.
type shareKind struct {
	share, budget         amp.ErrName
	shareText, budgetText string
	minCharge             time.Duration
}

// The two budgets of a handler: the matrices' comparisons (CATALOG-18)
// and the schemas' renderings (CATALOG-26, no floor: a small schema
// costs what it took).
var (
	compareKind = shareKind{ErrCompareShare, ErrCompareBudget, compareShareText, compareBudgetText, MinComputeCharge}
	renderKind  = shareKind{ErrRenderShare, ErrRenderBudget, renderShareText, renderBudgetText, 0}
)

// refusal is a computation refused: its error name, status, text and
// Retry-After.
type refusal struct {
	name   amp.ErrName
	status int
	text   string
	retry  time.Duration
}

// computeBucket is the compute time left to spend (negative: a debt),
// as of at, and the computations running.
type computeBucket struct {
	left    time.Duration
	at      time.Time
	running int
}

// refill adds what the bucket earned since at, at rate, up to burst.
func (b *computeBucket) refill(now time.Time, burst time.Duration, rate float64) {
	if d := now.Sub(b.at); d > 0 {
		b.left = min(burst, b.left+time.Duration(float64(d)*rate))
		b.at = now
	}
}

// wait is how long until the bucket has time left again, at rate: at
// least a second, in whole seconds.
func (b *computeBucket) wait(rate float64) time.Duration { return b.waitAbove(0, rate) }

// waitAbove is how long until the bucket has more than level left, at
// rate: at least a second, in whole seconds.
func (b *computeBucket) waitAbove(level time.Duration, rate float64) time.Duration {
	d := time.Duration(float64(level-b.left)/rate) + time.Nanosecond
	return max(time.Second, (d+time.Second-1)/time.Second*time.Second)
}

// computeShare is a compute budget of a handler's pages, in all and by
// peer: the matrices' comparisons or the schemas' renderings (kind names
// its refusals and its least charge). The last part of the total, the
// reserve, goes only to light peers (CATALOG-28): once PeerShare heavy
// peers together spent the rest, they are refused first, and a new
// reader, or one that used little, is still served. A computation is
// charged only when it ends, so each one running counts for its part of
// the reserve (reserve/maxRunning) until then, and a light peer takes
// the reserve one computation at a time (CATALOG-31). A peer is light
// only while its network (admission.Network: an IPv6 peer's /48) is, so
// that a site's fresh /64s take the reserve as one peer (CATALOG-32).
// Safe for concurrent use.
type computeShare struct {
	kind                    shareKind
	now                     func() time.Time
	burst, peerBurst        time.Duration
	reserve, lightLeft      time.Duration
	part                    time.Duration // a running computation's part of the reserve
	rate, peerRate          float64
	maxRunning, peerRunning int
	mu                      sync.Mutex
	total                   computeBucket
	peers                   map[string]*computeBucket
	// networks are the buckets of the peers' networks
	// (admission.Network: an IPv6 peer's /48, an IPv4 address itself),
	// charged what each of their peers is: whether a peer is light is
	// also its network's (CATALOG-32).
	networks map[string]*computeBucket
}

// newComputeShare gives burst and rate (seconds a second) and running
// computations in all, and 1/share of each to one peer; with several
// peers (share over 1) the last 1/reserveShare of burst is the light
// peers' reserve.
func newComputeShare(kind shareKind, now func() time.Time, burst time.Duration, rate float64, running, share int) *computeShare {
	c := &computeShare{kind: kind, now: now, burst: burst, rate: rate, peerBurst: max(kind.minCharge, burst/time.Duration(share)),
		peerRate: rate / float64(share), maxRunning: running, peerRunning: max(1, running/share),
		total: computeBucket{left: burst, at: now()}, peers: map[string]*computeBucket{}, networks: map[string]*computeBucket{}}
	if share > 1 {
		c.reserve = burst / reserveShare
		c.part = c.reserve / time.Duration(max(1, running))
	}
	c.lightLeft = c.peerBurst - c.peerBurst/lightShare
	return c
}

// admit lets peer start a computation, or refuses it (its own share
// first, then the total, whose reserve only a light peer, new or with
// at least lightLeft in its bucket and its network's and nothing
// running in its network, may take; the computations running count for
// their parts of it). One admitted ends with charge.
func (c *computeShare) admit(peer string) *refusal {
	now := c.now()
	network := admission.Network(peer)
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.peers[peer]
	if b != nil {
		b.refill(now, c.peerBurst, c.peerRate)
		if b.left <= 0 {
			return c.shareRefusal(b.wait(c.peerRate))
		}
		if b.running >= c.peerRunning {
			return c.shareRefusal(time.Second)
		}
	}
	c.total.refill(now, c.burst, c.rate)
	if c.total.left <= 0 {
		return c.budgetRefusal(c.total.wait(c.rate))
	}
	n := c.networks[network]
	if n != nil {
		n.refill(now, c.peerBurst, c.peerRate)
	}
	if no := c.reserved(b, n); no != nil {
		return no
	}
	if c.total.running >= c.maxRunning {
		return c.budgetRefusal(time.Second)
	}
	if (b == nil && len(c.peers) >= maxComputePeers) || (n == nil && len(c.networks) >= maxComputePeers) {
		c.forgetFull(now)
		if (b == nil && len(c.peers) >= maxComputePeers) || (n == nil && len(c.networks) >= maxComputePeers) {
			return c.budgetRefusal(time.Second)
		}
	}
	if b == nil {
		b = &computeBucket{left: c.peerBurst, at: now}
		c.peers[peer] = b
	}
	if n == nil {
		n = &computeBucket{left: c.peerBurst, at: now}
		c.networks[network] = n
	}
	b.running++
	n.running++
	c.total.running++
	return nil
}

// reserved refuses a peer that is not light (b: its bucket, n: its
// network's, each nil when new) once the total, less the parts of the
// computations running (charged only when they end), is down to the
// reserve (CATALOG-28, CATALOG-31); nil when the peer may go on. Heavy
// peers whose computations start together just above the reserve take
// it only by what each costs beyond its part, and a light network takes
// the reserve one computation at a time: its second would be admitted
// as light before its first is charged. A peer is light only while its
// network is (CATALOG-32): a site's fresh /64s, each new, are one light
// peer of the reserve, not thousands.
func (c *computeShare) reserved(b, n *computeBucket) *refusal {
	if c.reserve <= 0 || (b == nil && n == nil) {
		return nil
	}
	level := c.reserve + time.Duration(c.total.running)*c.part
	if c.total.left > level {
		return nil
	}
	switch {
	case (b != nil && b.left < c.lightLeft) || (n != nil && n.left < c.lightLeft):
		// A peer, or a network, that used more than a little of a
		// peer's share waits until the total is above the reserve and
		// the running parts again.
		return c.budgetRefusal(c.total.waitAbove(level, c.rate))
	case n != nil && n.running > 0:
		// A light network, until its running computation ends.
		return c.budgetRefusal(time.Second)
	}
	return nil
}

// shareRefusal refuses a peer whose share is spent: 429, retry after.
func (c *computeShare) shareRefusal(retry time.Duration) *refusal {
	return &refusal{name: c.kind.share, status: http.StatusTooManyRequests, text: c.kind.shareText, retry: retry}
}

// budgetRefusal refuses as the server's budget is spent: 503, retry
// after.
func (c *computeShare) budgetRefusal(retry time.Duration) *refusal {
	return &refusal{name: c.kind.budget, status: http.StatusServiceUnavailable, text: c.kind.budgetText, retry: retry}
}

// charge ends a computation of peer that admit let start, which took d
// (at least its kind's minCharge is taken: the matrices'
// MinComputeCharge, nothing for the renderings, CATALOG-27).
func (c *computeShare) charge(peer string, d time.Duration) {
	d = max(d, c.kind.minCharge)
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total.refill(now, c.burst, c.rate)
	c.total.left -= d
	c.total.running--
	for _, b := range []*computeBucket{c.peers[peer], c.networks[admission.Network(peer)]} {
		if b != nil {
			b.refill(now, c.peerBurst, c.peerRate)
			b.left -= d
			b.running--
		}
	}
}

// forgetFull forgets the peers and networks whose bucket is full again
// and runs nothing.
func (c *computeShare) forgetFull(now time.Time) {
	for _, m := range []map[string]*computeBucket{c.peers, c.networks} {
		for p, b := range m {
			b.refill(now, c.peerBurst, c.peerRate)
			if b.running == 0 && b.left >= c.peerBurst {
				delete(m, p)
			}
		}
	}
}

// admitter is what lets a request of peer start a computation: nil when
// refused, else the function that ends it.
func (c *computeShare) admitter(peer string) func() (func(), *refusal) {
	return func() (func(), *refusal) {
		if r := c.admit(peer); r != nil {
			return nil, r
		}
		start := c.now()
		return func() { c.charge(peer, c.now().Sub(start)) }, nil
	}
}
