package admission

import (
	"context"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// ErrPeerBusy names the refusal of a message whose peer already has its
// queue bound (Fair's maxPeerQueue) of messages waiting for a slot: 5004,
// retryable.
const ErrPeerBusy amp.ErrName = "peer_busy"

// ErrSlotWaitEnded names the refusal of a message whose context ended
// while it waited for a processing slot (Fair.Enter): 5003, retryable;
// nothing of it was processed.
const ErrSlotWaitEnded amp.ErrName = "slot_wait_ended"

// Fair hands out a fixed number of processing slots (the goroutines that
// may verify, decrypt, decide and sign at once) by peer, before any of that
// work is done, so that a peer flooding messages — validly signed ones, or
// ones that fail verification — spends its own share, not others'. The
// peer a share is counted by is the network of the transport's peer
// (Network: an IPv4 address, or the /48 of an IPv6 /64), since one site
// has 65,536 /64s to send from. Three rules make the share:
//
//   - Turns: a slot that frees goes to the next peer in turn (round robin)
//     that has a message waiting; within a peer, its transport peers (the
//     /64s of a /48) take turns the same way, and the messages of each go
//     in arrival order.
//   - Inside: a message counts against its peer from Enter to its done
//     function, also while it waits without a slot (for a handler, a
//     network: Leave and Resume), but not while it is parked for a
//     batched write (Park), nor while it waits for another message's
//     outcome (Away), which does not keep its peer active either. While
//     other peers are active (a message inside, parked or waiting, or
//     one answered within FairLinger after at least FairLingerBusy of
//     its messages that verified were answered in the last one to two
//     FairLinger windows: Verified), a peer gets a new slot only while
//     it has fewer messages inside than the average of the others plus
//     one. A flooder with 128 messages in flight therefore
//     keeps about as many inside as the caller it competes with, not
//     eight times as many; and a caller whose messages are mostly on the
//     way (its replies travelling back, its next message coming) still
//     holds the flooder to about one message inside, instead of leaving it
//     every slot, so that what the flood costs the cores outside the gate
//     (reading, writing, the other end) stays in proportion. An address
//     sending one message now and then does not linger, and throttles
//     nobody while it has nothing inside.
//   - Reserve: the last free slot goes only to a peer that holds no other
//     slot (with 2 slots or more; its messages waiting without one, Idle,
//     hold none): neither one peer, even alone, nor all busy peers
//     together hold every slot, so that a peer that was idle finds a slot
//     at once instead of waiting for a message that may compute for
//     seconds (threat: one address with 8 costly validations in flight,
//     momentarily alone, held all 4 slots, and a sporadic caller's cheap
//     call waited 1.7 to 4.9 s). The reserve holds for a message taking a
//     slot back after a wait as well (Idle, Park).
//
// At most maxPeerQueue messages of one transport peer wait at once;
// beyond, Enter refuses at once with ErrPeerBusy (5004, retryable). A
// BATCH item is a message like any other: its container is parked (Park)
// while it runs. A goroutine that gave its slot back to wait (Leave, Idle)
// takes one again with Resume, before any new message: work admitted
// finishes first. When a linger ends while a
// message waits with slots free, the gate hands them on then (a timer),
// not only at the next Enter or done. Safe for concurrent use.
type Fair struct {
	maxQueue int
	slots    int // all slots (the Reserve rule applies from 2)

	// now is the clock of FairLinger (time.Now; tests replace it).
	now func() time.Time

	mu     sync.Mutex
	wake   *time.Timer // dispatches again when a linger that holds a message ends
	swept  time.Time   // the last sweep of peers that stopped lingering
	free   int
	resume []fairResume         // Resume callers, first come first served
	parked []*fairPeer          // peers with parked messages waiting to take a slot (back)
	seq    uint64               // the last fairResume.seq given
	ring   []*fairPeer          // peers with messages waiting, in turn order
	peers  map[string]*fairPeer // active peers (allowed) and lingering ones, by Network
	inside int                  // messages inside, all peers together
	// busy: the peers with a message inside, parked or waiting;
	// lingering: peers that had none left with FairLingerBusy messages
	// answered or more (some may have stopped lingering since), so that
	// counting the active peers walks only those (active).
	busy      int
	lingering []*fairPeer
}

// fairPeer is one active peer (a Network): the queues of its transport
// peers' messages waiting for a slot, and how many of its messages are
// inside.
type fairPeer struct {
	key     string
	subs    map[string]*fairSub // its transport peers with messages waiting
	turn    []*fairSub          // those, in turn order
	waiting int                 // messages waiting, all of subs together
	inside  int
	// idle: of those inside, the messages waiting without a slot (Idle)
	// until they take one back; the slots p holds are inside - idle (the
	// Reserve rule).
	idle   int
	parked int // messages parked (Park): not inside, but the peer is active
	// away: messages away (Away): neither inside nor keeping the peer
	// active; kept from the sweep until they come back.
	away int
	// back: its parked messages waiting to take a slot again, in order;
	// held while the peer is at its share (resumable).
	back   []fairResume
	inRing bool
	last   time.Time // when it last had nothing inside, parked or waiting
	// busy: it has a message inside, parked or waiting (counted in
	// Fair.busy); lingers: it is in Fair.lingering.
	busy, lingers bool

	// Messages that verified, answered, by FairLinger window: cur in
	// window win, prev in the one before.
	win       int64
	cur, prev int
}

// FairLinger is how long a peer counts as active after its last message
// was answered: a caller keeping a few messages in flight has, at times,
// all of them on the way (replies travelling back, the next message
// coming), and is not gone for that.
const FairLinger = 100 * time.Millisecond

// FairLingerBusy is how many of its messages that verified (Verified) a
// peer must have had answered in the current and the previous FairLinger
// window for its linger to count: a caller that keeps messages coming
// lingers between them; an address sending one cheap message now and
// then does not (threat: counted for 100 ms after each answer, with
// nothing inside, it held a busy caller to one message inside at a time,
// for about 1 KB/s of bad signatures), nor one whose messages fail
// verification, however many (threat: bursts of 16 bad signatures every
// 100 ms did the same).
const FairLingerBusy = 16

// usage is how many messages of p that verified were answered in the
// current and the previous FairLinger window at t.
func (p *fairPeer) usage(t time.Time) int {
	switch w := t.UnixNano() / int64(FairLinger); w {
	case p.win:
		return p.cur + p.prev
	case p.win + 1:
		return p.cur
	}
	return 0
}

// verified counts one message of p that verified, answered at t.
func (p *fairPeer) verified(t time.Time) {
	w := t.UnixNano() / int64(FairLinger)
	switch {
	case w == p.win+1:
		p.prev, p.cur = p.cur, 0
	case w != p.win:
		p.prev, p.cur = 0, 0
	}
	p.win = w
	p.cur++
}

// fairSub is one transport peer of a fairPeer (PeerOf: an IPv6 /64 of
// a /48) with messages waiting, in arrival order.
type fairSub struct {
	key     string
	waiters []fairWaiter
}

// fairResume is one message waiting to take a slot again: after Leave
// (t nil; p its peer when known: Idle), or parked (its ticket t); seq
// orders them all, first come first served.
type fairResume struct {
	ready chan struct{}
	t     *fairTicket
	p     *fairPeer
	seq   uint64
}

// fairWaiter is one message waiting for a slot.
type fairWaiter struct {
	ready chan struct{}
}

// Network is the peer whose share of the slots a message of the
// transport's peer (PeerOf: transport.Peer's IPv4 address or IPv6 /64)
// counts against: an IPv6 peer (a /64 or longer, or an address) by its
// /48, since one site's /48 holds 65,536 /64s to send from (threat: 16
// /64s of one /48, one message each, took every turn before a caller from
// elsewhere); anything else as it is. An IPv4 address stays its own
// peer: addresses are scarce, and a /24 is often many unrelated hosts.
func Network(peer string) string {
	var a netip.Addr
	if p, err := netip.ParsePrefix(peer); err == nil && p.Bits() >= 48 {
		a = p.Addr()
	} else if a, err = netip.ParseAddr(peer); err != nil {
		return peer
	}
	if !a.Is6() || a.Is4In6() {
		return peer
	}
	p, err := a.Prefix(48)
	if err != nil {
		return peer
	}
	return p.String()
}

// NewFair returns a gate of slots processing slots (at least 1) where one
// peer has at most maxPeerQueue messages waiting (unbounded when 0 or
// less).
func NewFair(slots, maxPeerQueue int) *Fair {
	slots = max(slots, 1)
	return &Fair{maxQueue: maxPeerQueue, slots: slots, free: slots, peers: map[string]*fairPeer{}, now: time.Now}
}

type admittedKey struct{}

// fairTicket is what the context Enter returns carries for its message:
// whether it verified (Verified), counted toward its peer's linger when
// it is done.
type fairTicket struct {
	verified atomic.Bool
	peer     *fairPeer // its peer
	parked   int       // Park and Away calls not yet resumed; f.mu
	away     bool      // the first of those was Away (p.away, not p.parked); f.mu
}

// Enter takes a slot for a message from the peer of ctx (PeerOf; "" for
// callers in the same process, whose queue has no bound), waiting for its
// turn. It returns ctx marked as admitted, and done, which gives back the
// slot and ends the message's count (call it once, holding the slot). A
// message entered with a ctx that is admitted already (a BATCH item,
// handled inside its container) is a message of its own, counted against
// its peer like any other: its container is away meanwhile (Away, AGENT-34), so that
// it does not wait for its own items. Enter returns an error, and holds
// nothing, when the transport peer already has maxPeerQueue messages
// waiting (5004 ErrPeerBusy,
// retryable) or when ctx ends first (5003 ErrSlotWaitEnded, retryable,
// with the context's error as its cause).
func (f *Fair) Enter(ctx context.Context) (context.Context, func(), error) {
	if ctx.Err() != nil {
		// Its caller is gone (a reset connection's backlog): no slot,
		// even a free one, which select would pick half the time.
		return ctx, nil, amp.Named(amp.CodeTimeout, ErrSlotWaitEnded, "gave up waiting for a processing slot").WithCause(ctx.Err())
	}
	key := PeerOf(ctx)
	net := Network(key)
	f.mu.Lock()
	p := f.peers[net]
	if p == nil {
		p = &fairPeer{key: net}
		f.peers[net] = p
	}
	s := p.subs[key]
	if key != "" && f.maxQueue > 0 && s != nil && len(s.waiters) >= f.maxQueue {
		f.forget(p)
		f.mu.Unlock()
		return ctx, nil, amp.Named(amp.CodeOverloaded, ErrPeerBusy, "too many messages from this address are waiting; retry later")
	}
	if s == nil {
		if p.subs == nil {
			p.subs = map[string]*fairSub{}
		}
		s = &fairSub{key: key}
		p.subs[key] = s
		p.turn = append(p.turn, s)
	}
	w := fairWaiter{ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	p.waiting++
	if !p.busy {
		p.busy = true
		f.busy++
	}
	if !p.inRing {
		p.inRing = true
		f.ring = append(f.ring, p)
	}
	f.dispatch()
	f.mu.Unlock()
	t := &fairTicket{peer: p}
	done := func() { f.done(p, t) }
	ctx = context.WithValue(ctx, admittedKey{}, t)
	select {
	case <-w.ready:
		return ctx, done, nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	select {
	case <-w.ready:
		// Granted meanwhile: give it back.
		f.mu.Unlock()
		done()
	default:
		// Not granted: w is still in s, which is still p's.
		for i, x := range s.waiters {
			if x.ready == w.ready {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				p.waiting--
				break
			}
		}
		if len(s.waiters) == 0 {
			p.drop(s)
		}
		f.forget(p)
		f.dispatch()
		f.mu.Unlock()
	}
	return ctx, nil, amp.Named(amp.CodeTimeout, ErrSlotWaitEnded, "gave up waiting for a processing slot").WithCause(ctx.Err())
}

// drop removes s, which has nothing waiting, from p's transport peers.
func (p *fairPeer) drop(s *fairSub) {
	delete(p.subs, s.key)
	for i, q := range p.turn {
		if q == s {
			p.turn = append(p.turn[:i], p.turn[i+1:]...)
			break
		}
	}
}

// next takes p's next waiting message: its next transport peer's first
// one, that transport peer going to the back of p's turns. p.waiting > 0.
func (p *fairPeer) next() fairWaiter {
	s := p.turn[0]
	w := s.waiters[0]
	s.waiters[0] = fairWaiter{}
	s.waiters = s.waiters[1:]
	p.waiting--
	p.turn[0] = nil
	p.turn = p.turn[1:]
	if len(s.waiters) > 0 {
		p.turn = append(p.turn, s)
	} else {
		delete(p.subs, s.key)
	}
	return w
}

// done gives back the slot of a message of p (its ticket t) and ends
// its count.
func (f *Fair) done(p *fairPeer, t *fairTicket) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.inside--
	f.inside--
	if t.verified.Load() {
		p.verified(f.now())
	}
	f.free++
	f.forget(p)
	f.dispatch()
}

// forget drops p from the ring when it has nothing waiting, and starts
// its linger when it has nothing inside either. f.mu is held.
func (f *Fair) forget(p *fairPeer) {
	if p.waiting > 0 {
		return
	}
	if p.inRing {
		p.inRing = false
		for i, q := range f.ring {
			if q == p {
				f.ring = append(f.ring[:i], f.ring[i+1:]...)
				break
			}
		}
	}
	if p.inside == 0 && p.parked == 0 {
		now := f.now()
		p.last = now
		if p.busy {
			p.busy = false
			f.busy--
		}
		if !p.lingers && p.usage(now) >= FairLingerBusy {
			p.lingers = true
			f.lingering = append(f.lingering, p)
		}
	}
}

// sweep drops the peers whose linger is over, at most once per
// FairLinger. f.mu is held.
func (f *Fair) sweep() {
	now := f.now()
	if now.Sub(f.swept) < FairLinger {
		return
	}
	f.swept = now
	for k, p := range f.peers {
		if p.inside == 0 && p.parked == 0 && p.waiting == 0 && p.away == 0 && now.Sub(p.last) >= FairLinger {
			delete(f.peers, k)
		}
	}
}

// active is how many peers are active at now (isActive): computed once
// per dispatch, since a grant leaves every peer as active as it was (it
// had a message waiting or parked, and has one inside after), so that
// each check costs no walk of every peer (threat: held parked messages of
// 16 addresses, each check walking every peer under the gate's lock, cost
// every other message 1.7 ms). It walks only the peers that may linger,
// not every peer known (threat: one message each from 2,048 networks,
// bad signatures kept until the next sweep, made each dispatch walk them
// all, and every message's admission cost 36 times as much under the
// gate's one lock: TRANSPORT-16); a peer stops lingering with time
// alone, and is dropped from the walk then. f.mu is held.
func (f *Fair) active(now time.Time) int {
	n := f.busy
	kept := f.lingering[:0]
	for _, q := range f.lingering {
		switch {
		case f.peers[q.key] != q || q.usage(now) < FairLingerBusy:
			q.lingers = false // swept, or its linger is over for good
			continue
		case !q.busy:
			n++
		}
		kept = append(kept, q)
	}
	clear(f.lingering[len(kept):])
	f.lingering = kept
	return n
}

// isActive reports whether q has a message inside, parked or waiting, or
// lingers after FairLingerBusy verified messages answered or more.
func (q *fairPeer) isActive(now time.Time) bool {
	return q.inside > 0 || q.parked > 0 || q.waiting > 0 || q.usage(now) >= FairLingerBusy
}

// allowed reports whether p may have one more message inside, where
// active peers are active (f.active at now): when it is the only active
// peer, or while it has fewer than the average of the other active peers
// plus one. f.mu is held.
func (f *Fair) allowed(p *fairPeer, active int, now time.Time) bool {
	return f.room(p, active, now) > 0
}

// room is how many more messages p may have inside (allowed); math.MaxInt
// when it is the only active peer (the Reserve rule, spare, still holds
// it to all slots but one). f.mu is held.
func (f *Fair) room(p *fairPeer, active int, now time.Time) int {
	others := active
	if p.isActive(now) {
		others--
	}
	if others <= 0 {
		return math.MaxInt
	}
	return (f.inside-p.inside+others-1)/others + 1 - p.inside
}

// spare reports whether a message of p may take a free slot under the
// Reserve rule: when another slot stays free, when there are fewer than 2
// slots, or when p holds no slot (its messages inside, if any, all wait
// without one: Idle); a message of no known peer (p nil: Resume after
// Leave) may too. ahead is how many of p's messages take a slot before it
// (Resumable: its parked messages waiting before it; else 0). The slots
// held count, not the messages inside (threat: a caller with one
// invocation waiting in its handler was refused the last free slot, which
// then stayed empty while a flooder's costly validation ran for seconds).
// f.mu is held.
func (f *Fair) spare(p *fairPeer, ahead int) bool {
	return f.free > 1+ahead || f.slots < 2 || p == nil || p.inside-p.idle+ahead <= 0
}

// dispatch hands the free slots on: to Resume callers first, then to the
// waiting peers in turn, skipping those that have their share inside,
// and keeping the last slot for a peer that holds no slot (spare).
// f.mu is held.
func (f *Fair) dispatch() {
	f.sweep()
	now := f.now()
	active := -1 // f.active(now), once needed
	for f.free > 0 {
		if active < 0 && (len(f.parked) > 0 || len(f.ring) > 0) {
			active = f.active(now)
		}
		busy := f.busy
		if f.nextResume(active, now) {
			if f.busy != busy {
				active = -1 // a message back from Away made its peer active
			}
			continue
		}
		i, held := 0, false
		for ; i < len(f.ring); i++ {
			p := f.ring[i]
			if !f.allowed(p, active, now) {
				held = true // by the others' counts, which time may change
			} else if f.spare(p, 0) {
				break
			}
		}
		if i == len(f.ring) {
			if held || len(f.parked) > 0 {
				f.wakeLater()
			}
			return
		}
		p := f.ring[i]
		f.ring = append(f.ring[:i], f.ring[i+1:]...)
		w := p.next()
		p.inside++
		f.inside++
		f.free--
		close(w.ready)
		if p.waiting > 0 {
			// To the back of the ring: one message per peer per turn.
			f.ring = append(f.ring, p)
		} else {
			p.inRing = false
		}
	}
}

// wakeLater dispatches again in FairLinger when messages wait with slots
// free, each held by the others' counts: those change at Enter, done and
// Leave, which dispatch, but a linger ends with time alone (threat: a
// BATCH whose container waits for its item, queued behind a message of
// its address that a linger held, hung with every slot free until
// another address sent a message). f.mu is held.
func (f *Fair) wakeLater() {
	if f.wake != nil {
		return
	}
	f.wake = time.AfterFunc(FairLinger, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.wake = nil
		f.dispatch()
	})
}

// Leave gives back the slot of a message that goes on waiting without
// one (for a handler, a network round trip); it takes one again with
// Resume. Its count stays (for a wait that costs the others nothing, or
// one for another message of the same peer: Park). A message whose
// context Enter returned leaves with Idle instead, so that its peer is
// known when it comes back (the Reserve rule).
func (f *Fair) Leave() {
	f.mu.Lock()
	f.free++
	f.dispatch()
	f.mu.Unlock()
}

// Resume takes a slot again after Leave: before any message waiting in
// Enter, and never refused, since its message was admitted already.
func (f *Fair) Resume() {
	f.resumeAs(nil)
}

// Idle gives back the slot of the message of ctx (the context Enter
// returned) while it waits without one, still counted against its peer
// (Leave); it takes one again with the returned resume, called once: like
// Resume, but the last free slot only when its peer holds no other slot
// (the Reserve rule: threat, one address's messages coming back from
// their handlers into the slot kept for a caller with nothing inside).
// Meanwhile the message holds no slot: it does not keep its peer off the
// last free one. Without a ticket in ctx, Idle is Leave and resume is
// Resume.
func (f *Fair) Idle(ctx context.Context) (resume func()) {
	t, _ := ctx.Value(admittedKey{}).(*fairTicket)
	if t == nil {
		f.Leave()
		return f.Resume
	}
	f.mu.Lock()
	t.peer.idle++ // it holds no slot until resume (spare)
	f.free++
	f.dispatch()
	f.mu.Unlock()
	return func() { f.resumeAs(t.peer) }
}

// resumeAs takes a slot again for a message of p (nil: unknown) that
// left one, counted (Leave, Idle: then counted in p.idle until it holds
// its slot again).
func (f *Fair) resumeAs(p *fairPeer) {
	f.mu.Lock()
	f.catchUp()
	if f.free > 0 && len(f.resume) == 0 && f.spare(p, 0) {
		f.free--
		p.holds()
		f.mu.Unlock()
		return
	}
	f.seq++
	r := fairResume{ready: make(chan struct{}), p: p, seq: f.seq}
	f.resume = append(f.resume, r)
	f.dispatch() // one held by the Reserve rule may be first in line
	f.mu.Unlock()
	<-r.ready
}

// unparkLater takes a slot again for the parked message of ticket t:
// at once when one is free and its peer is within its share with none of
// its parked messages before it; else in turn (nextResume).
func (f *Fair) unparkLater(t *fairTicket) {
	p := t.peer
	f.mu.Lock()
	f.catchUp()
	if now := f.now(); f.free > 0 && len(f.resume) == 0 && len(p.back) == 0 && f.resumable(t, f.active(now), now) {
		f.unpark(t)
		f.free--
		f.mu.Unlock()
		return
	}
	f.seq++
	r := fairResume{ready: make(chan struct{}), t: t, seq: f.seq}
	if len(p.back) == 0 {
		f.parked = append(f.parked, p)
	}
	p.back = append(p.back, r)
	f.dispatch()
	f.mu.Unlock()
	<-r.ready
}

// catchUp dispatches before a fast path takes a free slot while parked
// messages wait: one held may have become resumable with time alone (a
// linger ended), and came first. f.mu is held.
func (f *Fair) catchUp() {
	if f.free > 0 && len(f.parked) > 0 {
		f.dispatch()
	}
}

// nextResume hands a free slot to the message waiting to take one again
// that came first: a Resume caller, or the first parked message of a
// peer within its share (resumable); it reports whether there was one.
// Each peer's parked messages are checked once, at the head of its queue
// (threat: a scan of every held message, each check walking every peer,
// under the gate's lock: 2,048 held by 16 addresses of one key cost every
// other message 1.7 ms). f.mu is held.
func (f *Fair) nextResume(active int, now time.Time) bool {
	best := -1
	for i, p := range f.parked {
		if r := p.back[0]; (best < 0 || r.seq < f.parked[best].back[0].seq) && f.resumable(r.t, active, now) {
			best = i
		}
	}
	ri := -1
	if len(f.resume) > 0 && (f.free > 1 || f.slots < 2) {
		ri = 0
	} else {
		// The last slot: the first Resume caller whose peer holds no
		// slot (spare). A check costs no walk of the peers.
		for i, r := range f.resume {
			if f.spare(r.p, 0) {
				ri = i
				break
			}
		}
	}
	if ri >= 0 && (best < 0 || f.resume[ri].seq < f.parked[best].back[0].seq) {
		f.resume[ri].p.holds()
		close(f.resume[ri].ready)
		if ri == 0 {
			f.resume[0] = fairResume{}
			f.resume = f.resume[1:]
		} else {
			f.resume = append(f.resume[:ri], f.resume[ri+1:]...)
		}
		f.free--
		return true
	}
	if best < 0 {
		return false
	}
	p := f.parked[best]
	r := p.back[0]
	p.back[0] = fairResume{}
	p.back = p.back[1:]
	if len(p.back) == 0 {
		f.parked = append(f.parked[:best], f.parked[best+1:]...)
	}
	f.unpark(r.t)
	f.free--
	close(r.ready)
	return true
}

// resumable reports whether a parked message (ticket t) may take a slot
// again now: only while its peer is allowed one more message inside
// (allowed), since it counts again from then on (threat: a flood of slow
// invocations, parked while its "running" record was made durable and so
// admitted without count, came back into 128 handlers at once against a
// PING caller's 8), or when it is not its last Park; and the last free
// slot only when its peer holds no slot (spare). f.mu is held.
func (f *Fair) resumable(t *fairTicket, active int, now time.Time) bool {
	return (t.parked > 1 || f.allowed(t.peer, active, now)) && f.spare(t.peer, 0)
}

// holds counts a message of p (nil: unknown) that waited without a slot
// (Idle) as holding one again, as it takes it. f.mu is held.
func (p *fairPeer) holds() {
	if p != nil {
		p.idle--
	}
}

// unpark counts a parked message (ticket t) inside its peer again as it
// takes its slot, once its last Park ends; a message back from Away makes
// its peer active again. f.mu is held.
func (f *Fair) unpark(t *fairTicket) {
	if t.parked--; t.parked > 0 {
		return
	}
	p := t.peer
	if t.away {
		t.away = false
		p.away--
	} else {
		p.parked--
	}
	p.inside++
	f.inside++
	if !p.busy {
		p.busy = true
		f.busy++
	}
}

// Resumable reports whether the message of ctx, parked (Park), would take
// its slot back now without waiting for its peer's share, nor for the
// Reserve rule to let it have the last free slot (spare), counting its
// peer's parked messages waiting before it as inside and as taking a slot
// first (one whose peer then holds no slot may still wait for a free
// slot, before any new message); true when it is not parked.
// A hint, for whoever counts on the message coming back soon (the agent's
// ledger, which waits for writers expected soon): the shares move as
// other messages come and go.
func (f *Fair) Resumable(ctx context.Context) bool {
	t, _ := ctx.Value(admittedKey{}).(*fairTicket)
	if t == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	ahead := len(t.peer.back)
	return t.parked == 0 || (t.parked > 1 || f.room(t.peer, f.active(now), now) > ahead) && f.spare(t.peer, ahead)
}

// Park gives back the slot of the message of ctx (the context Enter
// returned) while it waits for a write that is batched with every other
// writer's and costs the others nothing more for its wait (a local
// ledger's group commit, made durable once for all the records it
// gathered); it takes one again with the returned resume, called once:
// like Resume (first come first served with Resume callers, before any
// message waiting in Enter), but only once its peer may have one more
// message inside (the Inside rule), since it counts again from then on.
// Unlike Leave, the message does not count as inside its peer while
// parked, though the peer stays active: a caller whose messages mostly
// wait for the disk competes with the others on what it computes, not on
// its writes in flight (threat: counting them, a flood of bad
// signatures, which only computes, held eight durable callers to the two
// to four messages it computed at once, about 18 % of their rate alone).
//
// A message that waits for another message's outcome (a copy waiting
// for the first copy's, a lock the other holds, a BATCH container for
// its items) goes Away instead. Without a ticket in ctx, Park is Leave
// and resume is Resume.
func (f *Fair) Park(ctx context.Context) (resume func()) {
	return f.park(ctx, false)
}

// Away gives back the slot of the message of ctx (the context Enter
// returned) while it waits for another message's outcome: a copy for
// its first copy's, a lock another message holds, a BATCH container for
// its items; it takes one again with the returned resume, called once,
// as after Park (within its peer's share, before any message waiting in
// Enter). Like Park, the message does not count as inside its peer, so
// that waiters cannot fill the share the message they wait for needs to
// come back (threat: a retried invocation stuck behind its own copies);
// unlike Park, it does not keep its peer active either, since that
// other message, whosever it is, is counted already: inside, idle or
// parked (threat: a copy of a long invocation sent from a second
// network, parked, made that network active with nothing inside, and
// held the invocation's caller, whose one message waited in its
// handler, to no new message at all with every slot free). Its peer
// counts as active again once the message takes its slot back. Without
// a ticket in ctx, Away is Leave and resume is Resume.
func (f *Fair) Away(ctx context.Context) (resume func()) {
	return f.park(ctx, true)
}

// park is Park (away false) and Away (away true).
func (f *Fair) park(ctx context.Context, away bool) (resume func()) {
	t, _ := ctx.Value(admittedKey{}).(*fairTicket)
	if t == nil {
		f.Leave()
		return f.Resume
	}
	p := t.peer
	f.mu.Lock()
	if t.parked == 0 {
		p.inside--
		f.inside--
		if t.away = away; away {
			p.away++
			f.forget(p)
		} else {
			p.parked++
		}
	}
	t.parked++
	f.free++
	f.dispatch()
	f.mu.Unlock()
	return func() { f.unparkLater(t) }
}

// Verified marks the message of ctx (the context Enter returned) as
// verified: when it is done, it counts toward its peer's linger
// (FairLingerBusy). The agent marks only a message whose outcome it
// records for its id, which its sender had to sign anew: not a copy
// answered from its ledger, one refused before its ledger is consulted,
// or one refused retryably and not recorded, whose bytes anyone who saw
// them can send again at no cost (docs/SPEC-DECISIONS.md AGENT-35).
func (f *Fair) Verified(ctx context.Context) {
	if t, ok := ctx.Value(admittedKey{}).(*fairTicket); ok {
		t.verified.Store(true)
	}
}

type peerKey struct{}

// WithPeer returns ctx for a message received from peer (as transport.Peer
// names it): the key under which Fair, and the agent, count what it sends.
func WithPeer(ctx context.Context, peer string) context.Context {
	return context.WithValue(ctx, peerKey{}, peer)
}

// PeerOf is the peer of ctx (WithPeer), or "" when no transport named
// one (a caller in the same process).
func PeerOf(ctx context.Context) string {
	p, _ := ctx.Value(peerKey{}).(string)
	return p
}

// DefaultPeerQueue is the default bound on one peer's messages waiting for
// a slot (NewFair's maxPeerQueue). It is above what either binding lets
// one peer have in flight by default (HTTP 16, TCP 128 with ampagent
// serve's defaults), so that there the binding's back-pressure or 503
// comes first: a refusal answered at once lets a flooder send the next
// message at once, and a loop of refusals costs the shared cores more
// than not reading its connection.
const DefaultPeerQueue = 256
