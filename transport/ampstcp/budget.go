package ampstcp

import (
	"container/list"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/transport"
)

// budget counts bytes in flight under a cap. acquireBy waits, in arrival
// order, until its charge fits (first come, first served: a large message
// is not starved by a stream of small ones); force charges without waiting
// (a reply larger than its request: the count may then pass the cap, and
// nothing new is admitted until it is back under). The waiters are the
// connections' read loops, at most one each, so the queue is bounded by the
// connection cap.
type budget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	waiters []*budgetWaiter
	// then, when set, admits more once the waiters that fit are admitted
	// (serverBudget: its partial frames). b.mu is held.
	then func()
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newBudget(max int64) *budget { return &budget{max: max} }

// fits reports whether n more bytes fit; a charge always fits when nothing
// is held, so a message of the largest size always makes progress.
func (b *budget) fits(n int64) bool { return b.used == 0 || b.used+n <= b.max }

// acquireBy charges n, waiting while it does not fit. It gives up
// (false, nothing charged) when stop is closed or expire (nil: never)
// fires first, for a charge whose lifetime ends then.
func (b *budget) acquireBy(n int64, stop <-chan struct{}, expire expiry) bool {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.fits(n) {
		b.used += n
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	if b.await(w.ready, stop, expire) {
		return true
	}
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted meanwhile: give it back.
		b.used -= n
	default:
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grant()
	return false
}

// await lets go of b.mu, which the caller holds, and waits for ready:
// true when it closes. When stop closes or expire fires first, it returns
// false with b.mu held again, for the caller to undo its wait (ready may
// have closed meanwhile).
func (b *budget) await(ready, stop <-chan struct{}, expire expiry) bool {
	b.mu.Unlock()
	select {
	case <-ready:
		return true
	case <-stop:
	case <-expire.wait():
	}
	b.mu.Lock()
	return false
}

// force charges n without waiting.
func (b *budget) force(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// release gives n back and admits the waiters that now fit, in order.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant admits waiters from the head of the queue while they fit, then
// what b.then admits. b.mu is held.
func (b *budget) grant() {
	for len(b.waiters) > 0 && b.fits(b.waiters[0].n) {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
	if b.then != nil {
		b.then()
	}
}

// inUse is the charge held now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// smallFrame is the largest message frame charged to the server-wide
// budget in one step, when its header is read; a larger one is charged as
// its bytes arrive, readChunk at a time (serverBudget).
const smallFrame = transport.SmallBody

// serverBudget counts the message bytes the whole server holds, under a
// cap, so that what the server holds is what peers have sent, not what
// they declared: a frame that is still arriving is charged the bytes
// received (and the step being read, at most readChunk more), not its
// declared size, which only its connection's and its peer's own budgets
// are charged (threat: four hosts trickling 16 MiB frames held the whole
// 64 MiB and every other caller waited behind them). Three rules keep
// it fair and free of deadlock:
//
//   - Small frames (at most smallFrame bytes, charged whole) never queue
//     behind a large one that waits to grow: they wait only for each
//     other, first come first served, and only when the whole cap is
//     taken.
//   - Large frames still arriving (partial), the oldest left out, hold
//     at most largeCap: the cap less one whole message (the room of the
//     oldest) and less an eighth (room for small frames). They grow
//     first come first served.
//   - The oldest partial frame may grow whenever the whole cap has room:
//     since the others leave it a whole message, it completes once what
//     is not partial (messages being handled, replies being written,
//     small frames, none of which waits for a partial frame) drains, or
//     it is cut off by the minimum data rate; then the next is the
//     oldest. So partial frames cannot deadlock waiting on each other,
//     and the cap is never passed by them.
//
// force charges without waiting (a reply larger than its request): the
// count may then pass the cap until it drains.
type serverBudget struct {
	budget                   // everything charged; its waiters are the small frames
	largeCap int64           // what partial frames may hold, the oldest left out
	partial  int64           // the part of used charged to partial frames
	frames   list.List       // partial frames, oldest first (*partialFrame)
	large    []*partialFrame // partial frames waiting to grow, in order
}

// partialFrame is a large frame being received.
type partialFrame struct {
	elem  *list.Element
	held  int64         // charged so far (in partial)
	want  int64         // the step it waits for
	ready chan struct{} // closed when want is granted
}

// newServerBudget caps the server at limit bytes, for messages of at
// most maxMsg bytes (serverBudget: largeCap is limit - maxMsg -
// transport.SmallReserve(limit), an eighth,
// at least 0: then large frames arrive one at a time).
func newServerBudget(limit, maxMsg int64) *serverBudget {
	b := &serverBudget{budget: budget{max: limit}, largeCap: max(limit-maxMsg-transport.SmallReserve(limit), 0)}
	b.then = b.grantLarge
	return b
}

// fitsGrow reports whether p may grow by n. b.mu is held.
func (b *serverBudget) fitsGrow(p *partialFrame, n int64) bool {
	oldest := b.frames.Front().Value.(*partialFrame)
	switch {
	case b.used == p.held:
		return true // alone
	case p == oldest:
		return b.used+n <= b.max
	}
	return b.partial-oldest.held+n <= b.largeCap && b.used+n <= b.max
}

// expiry gives the channel that fires when a frame's lifetime is over;
// it is called only when a charge has to wait (nil: no lifetime), so the
// read loop also starts watching its connection then (serverConn.watch).
type expiry func() <-chan time.Time

// wait returns e's channel, or nil (never ready) when e is nil.
func (e expiry) wait() <-chan time.Time {
	if e == nil {
		return nil
	}
	return e()
}

// acquireSmallBy charges a small frame of n bytes, waiting while it does
// not fit; false (nothing charged) when stop closes or expire fires (the
// frame's lifetime ends) first.
func (b *serverBudget) acquireSmallBy(n int64, stop <-chan struct{}, expire expiry) bool {
	return b.acquireBy(n, stop, expire)
}

// begin registers a large frame whose header was just read; it ends with
// done (received whole: its charge stays, as a message's) or abort.
func (b *serverBudget) begin() *partialFrame {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := &partialFrame{}
	p.elem = b.frames.PushBack(p)
	return p
}

// growBy charges n more bytes to p, before they are read, waiting while
// they do not fit; false when stop closes or expire fires (the frame's
// lifetime ends) first, and what p holds is then given back by abort
// (threat: a frame waiting here kept its charges, its rate clock stopped,
// for as long as the budget stayed full).
func (b *serverBudget) growBy(p *partialFrame, n int64, stop <-chan struct{}, expire expiry) bool {
	b.mu.Lock()
	if (len(b.large) == 0 || b.frames.Front() == p.elem) && b.fitsGrow(p, n) {
		b.used += n
		b.partial += n
		p.held += n
		b.mu.Unlock()
		return true
	}
	p.want, p.ready = n, make(chan struct{})
	b.large = append(b.large, p)
	ready := p.ready
	if b.await(ready, stop, expire) {
		return true
	}
	defer b.mu.Unlock()
	select {
	case <-ready:
		// Granted meanwhile: held, and given back by abort.
	default:
		b.dropLarge(p)
		p.want = 0
	}
	return false
}

// dropLarge removes p from the waiters. b.mu is held.
func (b *serverBudget) dropLarge(p *partialFrame) {
	for i, x := range b.large {
		if x == p {
			b.large = append(b.large[:i], b.large[i+1:]...)
			return
		}
	}
}

// done ends p, received whole: its charge stays (released with the
// message's), and the next partial frame may be the oldest.
func (b *serverBudget) done(p *partialFrame) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.frames.Remove(p.elem)
	b.partial -= p.held
	b.grant()
}

// abort ends p, cut off: what it holds is given back.
func (b *serverBudget) abort(p *partialFrame) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.frames.Remove(p.elem)
	b.dropLarge(p)
	b.partial -= p.held
	b.used -= p.held
	p.held = 0
	b.grant()
}

// grantLarge admits, once the small frames that fit are admitted, the
// oldest partial frame, then the other partial frames in order while they
// fit. b.mu is held.
func (b *serverBudget) grantLarge() {
	if f := b.frames.Front(); f != nil {
		if p := f.Value.(*partialFrame); p.want > 0 && b.fitsGrow(p, p.want) {
			b.dropLarge(p)
			b.admit(p)
		}
	}
	for len(b.large) > 0 && b.fitsGrow(b.large[0], b.large[0].want) {
		p := b.large[0]
		b.large[0] = nil
		b.large = b.large[1:]
		b.admit(p)
	}
}

// admit grants p the step it waits for. b.mu is held.
func (b *serverBudget) admit(p *partialFrame) {
	b.used += p.want
	b.partial += p.want
	p.held += p.want
	p.want = 0
	close(p.ready)
}
