package transport

import (
	"sync"

	"github.com/ampbundle/ampbundle/admission"
)

// Admission counts the requests, and the request bytes, a server holds in
// flight, in all and by peer, and refuses at once what does not fit: it
// never queues. The bytes count by peer (Peer: an IP address, an IPv6
// /64); the requests by its site (admission.Network of the peer: an IPv6
// peer's /48, as LimitListener counts connections), since one host with a
// /48 sends from as many /64s as it likes and, counted by /64, held every
// slot from four of them (docs/SPEC-DECISIONS.md TRANSPORT-28). Each
// share is strict, so that a few hosts holding slow requests cannot take
// every slot. Safe for concurrent use.
type Admission struct {
	maxReqs, maxPeerReqs, maxBytes, maxPeerBytes int64

	mu          sync.Mutex
	reqs, bytes int64
	large       int64 // the part of bytes charged to large bodies
	peers       map[string]*peerLoad
	sites       map[string]int64 // requests in flight by site (admission.Network)
}

// peerLoad is what one peer holds: requests and bytes, and its site.
type peerLoad struct {
	reqs, bytes int64
	site        string
}

// NewAdmission admits at most maxReqs requests and maxBytes bytes at
// once, of which one peer holds at most maxPeerReqs and maxPeerBytes. A
// server that charges no bytes passes 0 for both and never calls Charge.
func NewAdmission(maxReqs, maxPeerReqs int, maxBytes, maxPeerBytes int64) *Admission {
	return &Admission{maxReqs: int64(maxReqs), maxPeerReqs: int64(maxPeerReqs), maxBytes: maxBytes, maxPeerBytes: maxPeerBytes,
		peers: map[string]*peerLoad{}, sites: map[string]int64{}}
}

// Enter admits one more request from peer, or names the limit it meets:
// "requests" (the server's) or "peer_requests" (the share of the peer's
// site: every /64 of an IPv6 /48 together). An admitted request ends
// with Leave.
func (a *Admission) Enter(peer string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reqs >= a.maxReqs {
		return "requests"
	}
	p := a.peers[peer]
	site := admission.Network(peer)
	if p != nil {
		site = p.site
	}
	if a.sites[site] >= a.maxPeerReqs {
		return "peer_requests"
	}
	if p == nil {
		p = &peerLoad{site: site}
		a.peers[peer] = p
	}
	a.reqs++
	p.reqs++
	a.sites[site]++
	return ""
}

// leaveSite counts one request of p's site less. a.mu is held.
func (a *Admission) leaveSite(p *peerLoad) {
	if a.sites[p.site]--; a.sites[p.site] <= 0 {
		delete(a.sites, p.site)
	}
}

// Charge admits n more bytes for a request of peer that entered, or
// reports that they do not fit (the server's bytes or the peer's share).
func (a *Admission) Charge(peer string, n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.peers[peer]
	if a.bytes+n > a.maxBytes || p.bytes+n > a.maxPeerBytes {
		return false
	}
	a.bytes += n
	p.bytes += n
	return true
}

// ChargePeer admits n more bytes against the share of peer only (a
// request that entered), or reports that they do not fit: what a body
// declares is charged to its own peer at once, and to the server, with
// ChargeServer, only as it arrives, so that bodies trickled slowly hold
// of the server's bytes only what they sent.
func (a *Admission) ChargePeer(peer string, n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.peers[peer]
	if p.bytes+n > a.maxPeerBytes {
		return false
	}
	p.bytes += n
	return true
}

// ChargeServer admits n more bytes against the server's bytes only, or
// reports that they do not fit (see ChargePeer).
func (a *Admission) ChargeServer(n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bytes+n > a.maxBytes {
		return false
	}
	a.bytes += n
	return true
}

// SmallBody is the largest body or frame that counts as small for the
// server's byte budget: one read step of both bindings (64 KiB).
const SmallBody = 64 << 10

// SmallReserve is the part of a server byte budget of limit bytes that
// bodies or frames larger than SmallBody cannot take, kept for small
// ones: an eighth. Both bindings apply it (amphttp with
// ChargeServerLarge, ampstcp in its server budget), so that large bodies
// sent fast and then stalled cannot leave a small message no room.
func SmallReserve(limit int64) int64 { return limit / 8 }

// ChargeServerLarge is ChargeServer for a body larger than SmallBody (or
// of unknown length) that holds held bytes already: the large ones
// together hold at most the server's bytes less SmallReserve, except one
// alone (held is all the large ones hold), which may use the whole, so
// that a body of the largest size always fits an idle server.
func (a *Admission) ChargeServerLarge(n, held int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bytes+n > a.maxBytes || (a.large != held && a.large+n > a.maxBytes-SmallReserve(a.maxBytes)) {
		return false
	}
	a.bytes += n
	a.large += n
	return true
}

// ForceServer charges n more bytes of the server's to a request in
// flight without checking the cap (large: as ChargeServerLarge): for a
// copy it holds only a moment (a body's chunks joined), which the count
// then shows until ReleaseServer.
func (a *Admission) ForceServer(n int64, large bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bytes += n
	if large {
		a.large += n
	}
}

// ReleaseServer gives back n bytes of the server's that a request still
// in flight was charged (large: with ChargeServerLarge), once it holds
// them no more.
func (a *Admission) ReleaseServer(n int64, large bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bytes -= n
	if large {
		a.large -= n
	}
}

// Leave ends a request of peer that was charged held bytes in all
// (Charge).
func (a *Admission) Leave(peer string, held int64) { a.LeaveHeld(peer, held, held) }

// LeaveHeld ends a request of peer that was charged peerHeld bytes of
// its share and serverHeld of the server's (ChargePeer, ChargeServer and
// Charge together).
func (a *Admission) LeaveHeld(peer string, peerHeld, serverHeld int64) {
	a.LeaveHeldLarge(peer, peerHeld, serverHeld, 0)
}

// LeaveHeldLarge is LeaveHeld for a request of which largeHeld of
// serverHeld was charged with ChargeServerLarge.
func (a *Admission) LeaveHeldLarge(peer string, peerHeld, serverHeld, largeHeld int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs--
	a.bytes -= serverHeld
	a.large -= largeHeld
	p := a.peers[peer]
	p.reqs--
	a.leaveSite(p)
	p.bytes -= peerHeld
	a.forget(peer, p)
}

// forget drops the load of peer once it holds nothing: no request, and
// no byte (a reply not yet written holds bytes without a request). a.mu
// is held.
func (a *Admission) forget(peer string, p *peerLoad) {
	if p.reqs <= 0 && p.bytes <= 0 {
		delete(a.peers, peer)
	}
}

// Answer ends a request of peer as LeaveHeldLarge does, and charges in
// its place the reply the server now holds for it, reply bytes, to the
// peer's share and to the server's bytes until ReleaseReply: from the
// moment the handler returns, the server holds the reply, not the
// request, so a peer that does not read its reply pins that reply's
// bytes and no slot (the TCP binding does the same with its frames).
// The reply is charged without checking either cap (the request that
// made it was admitted, and the work is done): what it adds beyond its
// request is at most one message per request admitted, and while the
// peer's replies fill its share none of its new bodies is admitted. A
// reply larger than SmallBody is charged to the large part of the
// server's bytes too (replyLarge), as a large body is: replies of large
// bodies, unread, still leave SmallReserve to small bodies, and a large
// body that comes meanwhile is not "alone".
func (a *Admission) Answer(peer string, peerHeld, serverHeld, largeHeld, reply int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs--
	a.bytes += reply - serverHeld
	a.large -= largeHeld
	if replyLarge(reply) {
		a.large += reply
	}
	p := a.peers[peer]
	p.reqs--
	a.leaveSite(p)
	p.bytes += reply - peerHeld
	a.forget(peer, p)
}

// replyLarge reports whether a reply of n bytes counts as large for the
// server's bytes (Answer, ReleaseReply).
func replyLarge(n int64) bool { return n > SmallBody }

// ReleaseReply gives back the n bytes of a reply charged by Answer, once
// it is written or given up.
func (a *Admission) ReleaseReply(peer string, n int64) {
	if n == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bytes -= n
	if replyLarge(n) {
		a.large -= n
	}
	if p := a.peers[peer]; p != nil {
		p.bytes -= n
		a.forget(peer, p)
	}
}

// Bytes is the bytes the server holds, all peers together.
func (a *Admission) Bytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bytes
}

// PeerBytes is the bytes peer holds of its share.
func (a *Admission) PeerBytes(peer string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.peers[peer]; p != nil {
		return p.bytes
	}
	return 0
}

// Requests is the requests the server holds in flight, all peers
// together.
func (a *Admission) Requests() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs
}
