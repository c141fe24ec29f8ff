package etcdledger

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// grant is one lease grant in flight: every caller that needs the lease
// meanwhile waits for this one (one deadline, one etcd call) instead of
// queueing its own behind a lock.
type grant struct {
	done chan struct{}
	id   clientv3.LeaseID
	err  error
}

// session is this process's lease for its claims, kept alive while the
// process runs; when it expires (etcd did not hear from the process in
// SessionTTL) its claims are gone and a new one is granted.
type session struct {
	s      *Store
	mu     sync.Mutex
	id     clientv3.LeaseID
	cancel context.CancelFunc
	flight *grant // the grant in flight, if any
	// ttl is the TTL etcd granted the session lease (seconds, SessionTTL
	// raised to etcd's minimum where below it), kept once granted: a
	// claim under a lease granted for over twice it is no node's
	// (docs/SPEC-DECISIONS.md FLEET-40, FLEET-42).
	ttl int64
}

// lease returns the live session lease, granting one if there is none;
// concurrent callers share one grant.
func (se *session) lease() (clientv3.LeaseID, error) {
	se.mu.Lock()
	if se.id != 0 {
		id := se.id
		se.mu.Unlock()
		return id, nil
	}
	f := se.flight
	if f == nil {
		f = &grant{done: make(chan struct{})}
		se.flight = f
		se.mu.Unlock()
		se.grant(f)
	} else {
		se.mu.Unlock()
	}
	<-f.done
	return f.id, f.err
}

// grant grants the session lease, keeps it alive, and ends f.
func (se *session) grant(f *grant) {
	defer close(f.done)
	var id clientv3.LeaseID
	var ttl int64
	err := se.s.call("lease", func(ctx context.Context) error {
		r, err := se.s.cli.Grant(ctx, int64(se.s.o.SessionTTL/time.Second))
		if err == nil {
			id, err = grantedID(r)
			ttl = r.TTL
		}
		return err
	})
	ctx, cancel := context.WithCancel(se.s.bg)
	var ch <-chan *clientv3.LeaseKeepAliveResponse
	if err == nil {
		ch, err = se.s.cli.KeepAlive(ctx, id)
	}
	se.mu.Lock()
	se.flight = nil
	if err == nil {
		se.id, se.cancel, se.ttl = id, cancel, ttl
	}
	se.mu.Unlock()
	f.id, f.err = id, err
	if err != nil {
		cancel()
		return
	}
	go func() {
		for range ch { // the keep-alive answers: drained
		}
		se.mu.Lock()
		if se.id == id {
			se.id = 0 // expired or closed: the next claim grants a new one
		}
		se.mu.Unlock()
		cancel()
	}()
}

// holds reports whether id is still the live session lease: a claim
// made under an expired one is gone (etcd deleted it with the lease).
func (se *session) holds(id clientv3.LeaseID) bool {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.id == id
}

// grantedTTL is the TTL etcd granted the last session lease (seconds;
// 0 before the first grant).
func (se *session) grantedTTL() int64 {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.ttl
}

// revoke ends the session: its claims are deleted at once.
func (se *session) revoke() {
	se.mu.Lock()
	id, cancel := se.id, se.cancel
	se.id = 0
	se.mu.Unlock()
	if id == 0 {
		return
	}
	cancel()
	_ = se.s.call("lease", func(ctx context.Context) error {
		_, err := se.s.cli.Revoke(ctx, id)
		return err
	})
}

// leaseCache holds one lease per expiry bucket end (unix seconds): every
// entry of the bucket, and its usage counters, are attached to it, so
// that etcd deletes them together, MaxClockSkew after the bucket's end
// (docs/SPEC-DECISIONS.md FLEET-6).
type leaseCache struct {
	s       *Store
	mu      sync.Mutex
	m       map[int64]clientv3.LeaseID
	flights map[int64]*grant // grants in flight by bucket end
	// until is, for each lease of m, the earliest time etcd may delete
	// it, on the clock that is never stepped (the monotonic reading of
	// time.Now): the time its grant was asked plus its TTL. A lease
	// granted while the wall clock was ahead ends that much before the
	// bucket's end (plus the skew) by the right clock; it is not used
	// for a later entry that needs it to last longer (FLEET-26).
	until map[int64]time.Time
}

// get returns the lease ending at end (plus MaxClockSkew), granted if
// needed; concurrent callers for one end share one grant. A cached lease
// that etcd may delete more than a second before the bucket's end plus
// MaxClockSkew by the wall clock now (granted while that clock was
// ahead, and stepped back since) is granted again: an entry written
// under it would vanish early, and a copy of its message accepted in
// between would run again (FLEET-26).
func (lc *leaseCache) get(end int64) (clientv3.LeaseID, error) {
	need := time.Duration(leaseTTL(end, lc.s.o.Now(), lc.s.o.MaxClockSkew)) * time.Second
	lc.mu.Lock()
	if id, ok := lc.m[end]; ok && time.Until(lc.until[end]) > need-time.Second {
		lc.mu.Unlock()
		return id, nil
	}
	f, inFlight := lc.flights[end]
	if !inFlight {
		f = &grant{done: make(chan struct{})}
		lc.flights[end] = f
	}
	lc.mu.Unlock()
	if !inFlight {
		lc.grant(end, f)
	}
	<-f.done
	return f.id, f.err
}

// grant grants the lease of end and ends f.
func (lc *leaseCache) grant(end int64, f *grant) {
	defer close(f.done)
	ttl := leaseTTL(end, lc.s.o.Now(), lc.s.o.MaxClockSkew)
	asked := time.Now() // etcd counts the TTL from no earlier than this
	var id clientv3.LeaseID
	err := lc.s.call("lease", func(ctx context.Context) error {
		r, err := lc.s.cli.Grant(ctx, ttl)
		if err == nil {
			id, err = grantedID(r)
		}
		return err
	})
	lc.mu.Lock()
	delete(lc.flights, end)
	if err == nil {
		if lc.until == nil {
			lc.until = map[int64]time.Time{}
		}
		lc.m[end], lc.until[end] = id, asked.Add(time.Duration(ttl)*time.Second)
	}
	lc.mu.Unlock()
	f.id, f.err = id, err
}

// leaseTTL is the TTL (seconds, at least 1) of the lease of the bucket
// ending at end, granted at now by this node's clock: up to end plus the
// clock skew the fleet's nodes may have between them, plus 1 s for the
// rounding of now. A node whose clock runs up to skew ahead still keeps
// the entry until end by any other node's clock (docs/FLEET.md, "Clocks").
func leaseTTL(end int64, now time.Time, skew time.Duration) int64 {
	return max(end+int64((skew+time.Second-1)/time.Second)-now.Unix()+1, 1)
}

// ends returns the earliest time etcd may delete the cached lease of the
// bucket ending at end, on the clock that is never stepped (zero when
// none is cached).
func (lc *leaseCache) ends(end int64) time.Time {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.until[end]
}

// drop forgets the lease of end (etcd no longer has it).
func (lc *leaseCache) drop(end int64) {
	lc.mu.Lock()
	delete(lc.m, end)
	delete(lc.until, end)
	lc.mu.Unlock()
}

// prune forgets the leases ended at now.
func (lc *leaseCache) prune(now time.Time) {
	lc.mu.Lock()
	for end := range lc.m {
		if end < now.Unix() {
			delete(lc.m, end)
			delete(lc.until, end)
		}
	}
	lc.mu.Unlock()
}

// grantedID is the lease etcd granted in r: never 0, which etcd reads as
// no lease at all (a claim or an entry written under it would never be
// deleted: FLEET-28); an answer without one is ErrBadValue.
func grantedID(r *clientv3.LeaseGrantResponse) (clientv3.LeaseID, error) {
	if r == nil || r.ID == clientv3.NoLease {
		return 0, badReply("a lease grant without a lease")
	}
	return r.ID, nil
}
