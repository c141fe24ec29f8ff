package etcdledger

import (
	"context"
	"crypto/sha256"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// runningBelow is the least entry value that is not a counted running
// entry of value version 1: Value(e) < runningBelow compares true for a
// counted running entry (state 1) only (an absent key compares false);
// an uncounted one (state 3, FLEET-22) is above it (runningValue).
const runningBelow = "\x01\x02"

// runningValue reports whether an entry value, made with a claim whose
// handler never ran, goes with that claim (clean): a running entry,
// counted or not (FLEET-22), or one below every version-1 value that is
// not running; a done entry, or one of another state or a later
// version, is kept.
func runningValue(v []byte) bool {
	return len(v) < 2 || string(v[:2]) < runningBelow || v[0] == valueVersion && v[1] == stateUncounted
}

// claimPlan is the running entry a Claim makes with its claim: the entry
// (the default reservation, the message's expiry), its cost, the counter
// it charges, the bucket lease, and the principal's counters it was
// checked against.
type claimPlan struct {
	e       entry
	cost    int64
	counter string
	lease   clientv3.LeaseID
	snap    *usageSnap
}

// Claim implements ledger.SharedStore with one transaction: when no
// process claims k and its entry is not done (version < 2), the claim key
// is created under this process's session lease and, in a nested
// transaction, the running entry with the default reservation under the
// bucket lease of the message's expiry, charged to the principal's usage
// counter (FLEET-11): the claim is the running record, and MarkRunning by
// this process needs no etcd write. Where the principal's share or this
// process's budget has no room for the entry, only the claim is made, and
// MarkRunning makes the entry or refuses by name; where its counters
// changed since they were read, the claim is made bare and the entry made
// at once in a second transaction, from the counters read back with the
// claim (claimEntryLate, FLEET-19). Otherwise the entry (and the claim) are
// read. A claim held by another process gives Wait, which closes on the
// next change of the claim key or after WaitPoll.
func (s *Store) Claim(k ledger.Key, expires time.Time) (ledger.ClaimResult, error) {
	dl := s.lockBy()
	lease, err := s.sess.lease()
	if err != nil {
		return ledger.ClaimResult{}, err
	}
	phex := hash16(s.principalOf(k.Sender))
	pl, err := s.hot.lock(usagePrefix(s.prefix, phex), dl)
	if err != nil {
		return ledger.ClaimResult{}, err
	}
	defer s.hot.unlock(pl)
	for attempt := 0; ; attempt++ {
		p, err := s.planClaim(k, expires, phex, pl)
		if err != nil {
			return ledger.ClaimResult{}, err
		}
		r, err := s.claimTxn(k, expires, lease, phex, p, pl)
		if p != nil && attempt < 2 && leaseNotFound(err) {
			s.leases.drop(p.e.end) // revoked, or a restored cluster: grant it again
			continue
		}
		return r, err
	}
}

// planClaim is the entry a Claim of k makes, or nil when there is no room
// for it (the budget, the principal's share, or counters refused as
// corrupt: MarkRunning then refuses by name). Callers hold pl.
func (s *Store) planClaim(k ledger.Key, expires time.Time, phex string, pl *principalLock) (*claimPlan, error) {
	reserve := s.reserveOf(0)
	cost := entryCost(k, reserve)
	now := s.o.Now()
	if s.budgetFull(now, cost, 0, 0) {
		return nil, nil
	}
	// The counters as this process last wrote them, or none: a guess the
	// transaction compares (no read on the way: FLEET-11).
	snap := pl.snap
	if snap == nil {
		snap = &usageSnap{}
	}
	if snap.sum+cost > s.lim.PerCaller {
		return nil, nil
	}
	e := entry{state: stateRunning, expires: expires, reserve: reserve, end: bucketEnd(now, expires)}
	ph := sha256.Sum256([]byte(s.principalOf(k.Sender)))
	copy(e.principal[:], ph[:16])
	lease, err := s.leases.get(e.end)
	if err != nil {
		return nil, err
	}
	return &claimPlan{e: e, cost: cost, counter: usageKey(s.prefix, phex, e.end), lease: lease, snap: snap}, nil
}

// claimTxn commits the Claim transaction of k with plan p (nil: the claim
// alone). An error whose answer may have been lost queues the undoing of
// what it may have made (found by its claim value): the agent refuses the
// message retryably and its handler never starts.
func (s *Store) claimTxn(k ledger.Key, expires time.Time, lease clientv3.LeaseID, phex string, p *claimPlan, pl *principalLock) (ledger.ClaimResult, error) {
	ks := keysOf(s.prefix, k)
	u := usagePrefix(s.prefix, phex)
	token := s.node + "." + strconv.FormatUint(s.seq.Add(1), 10)
	then := []clientv3.Op{clientv3.OpPut(ks.claim, token, clientv3.WithLease(lease))}
	var cur int64
	if p != nil {
		cur = p.snap.vals[p.counter]
		then = append(then, clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(ks.entry), "=", 0),
			clientv3.Compare(clientv3.ModRevision(u), "<", p.snap.rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(p.counter), "=", p.snap.mods[p.counter]), // not deleted since: FLEET-19
		}, []clientv3.Op{
			clientv3.OpPut(ks.entry, string(p.e.encode()), clientv3.WithLease(p.lease)),
			clientv3.OpPut(p.counter, itoa(cur+p.cost), clientv3.WithLease(p.lease)),
			s.counterRead(u),
		}, []clientv3.Op{clientv3.OpGet(ks.entry), s.counterRead(u)}))
	} else {
		// no room by the guess: the counters read back with the claim
		then = append(then, clientv3.OpGet(ks.entry), s.counterRead(u))
	}
	r, err := s.txn("claim", k, u, []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", 0),
		clientv3.Compare(clientv3.Version(ks.entry), "<", 2),
	}, then, []clientv3.Op{clientv3.OpGet(ks.entry), clientv3.OpGet(ks.claim)})
	if err != nil {
		if !leaseNotFound(err) { // etcd refused that one: nothing was written
			s.cleaner.lostClaim(k, token, expires)
		}
		return ledger.ClaimResult{}, err
	}
	if !r.Succeeded {
		return s.claimHeld(k, lease, r)
	}
	ci := claimInfo{lease: lease, rev: r.Header.Revision, token: token}
	kv := one(r.Responses[1])
	if p == nil && len(r.Responses) == 3 {
		if snap, err := s.snapOf(r.Responses[2].GetResponseRange(), r.Header.Revision); err == nil {
			ci.usage, pl.snap = snap, snap
		}
	}
	if p != nil {
		in := r.Responses[1].GetResponseTxn()
		if in == nil || len(in.Responses) != 2 && !in.Succeeded || len(in.Responses) != 3 && in.Succeeded {
			s.cleaner.lostClaim(k, token, expires)
			return ledger.ClaimResult{}, amp.Named(amp.CodeUnavailable, ErrBadValue, "etcd answered a claim without its nested result")
		}
		if in.Succeeded {
			n := cur + p.cost
			ci.entry = &claimEntry{e: p.e, rev: ci.rev, cost: p.cost, counter: p.counter, n: n, nrev: ci.rev}
			pl.learn(s, in.Responses[2], ci.rev)
			s.mu.Lock()
			s.claims[k] = ci
			s.charge(p.e.end, p.cost, 1)
			s.mu.Unlock()
			return ledger.ClaimResult{}, nil // fresh, running here
		}
		kv = one(in.Responses[0])
		if kv == nil { // the counters changed: the claim alone; Running charges
			if snap, err := s.snapOf(in.Responses[1].GetResponseRange(), r.Header.Revision); err == nil {
				ci.usage, pl.snap = snap, snap
			}
		}
	}
	ci.ran = kv != nil
	if kv == nil && p != nil && ci.usage != nil {
		if err := s.claimEntryLate(k, &ci, expires, phex, pl); err != nil {
			s.mu.Lock()
			s.claims[k] = ci
			s.mu.Unlock()
			s.Unclaim(k) // the claim, and the entry if it was made
			return ledger.ClaimResult{}, err
		}
	}
	s.mu.Lock()
	s.claims[k] = ci
	s.mu.Unlock()
	if kv == nil {
		return ledger.ClaimResult{}, nil // fresh
	}
	return s.foundRunning(k, kv)
}

// claimEntryLate makes the running entry under ci, a claim of k that the
// Claim transaction made bare because its guess of the principal's
// counters was stale (another node wrote them, or one was deleted:
// FLEET-19), from the counters read back with the claim: one more
// transaction while the claim holds, the entry is absent and the counters
// are as read; what Running would otherwise write. No room, or counters
// changed again, leaves the claim bare (Running makes the entry or
// refuses by name); an error whose answer may be lost is returned, the
// caller undoing the claim with whatever entry it made. Callers hold pl.
func (s *Store) claimEntryLate(k ledger.Key, ci *claimInfo, expires time.Time, phex string, pl *principalLock) error {
	ks := keysOf(s.prefix, k)
	u := usagePrefix(s.prefix, phex)
	for attempt := 0; attempt < 2; attempt++ {
		p, err := s.planClaim(k, expires, phex, pl)
		if err != nil || p == nil {
			return nil
		}
		cur := p.snap.vals[p.counter]
		r, err := s.txn("claim", k, u, []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", ci.rev),
			clientv3.Compare(clientv3.CreateRevision(ks.entry), "=", 0),
			clientv3.Compare(clientv3.ModRevision(u), "<", p.snap.rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(p.counter), "=", p.snap.mods[p.counter]),
		}, []clientv3.Op{
			clientv3.OpPut(ks.entry, string(p.e.encode()), clientv3.WithLease(p.lease)),
			clientv3.OpPut(p.counter, itoa(cur+p.cost), clientv3.WithLease(p.lease)),
			s.counterRead(u),
		}, nil)
		if leaseNotFound(err) { // nothing written: a lease granted again
			s.leases.drop(p.e.end)
			continue
		}
		if err != nil {
			return err
		}
		if !r.Succeeded || len(r.Responses) != 3 {
			return nil
		}
		rev := r.Header.Revision
		ci.entry = &claimEntry{e: p.e, rev: rev, cost: p.cost, counter: p.counter, n: cur + p.cost, nrev: rev}
		pl.learn(s, r.Responses[2], rev)
		s.mu.Lock()
		s.charge(p.e.end, p.cost, 1)
		s.mu.Unlock()
		return nil
	}
	return nil
}

// foundRunning answers a Claim that claimed k's running entry kv, whose
// claimer is gone: Lost, the outcome is unknown.
func (s *Store) foundRunning(k ledger.Key, kv *mvccpb.KeyValue) (ledger.ClaimResult, error) {
	e, err := decodeEntry(kv.Value)
	if err != nil || e.state != stateRunning {
		s.Unclaim(k)
		if err == nil {
			err = amp.Named(amp.CodeUnavailable, ErrBadValue, "ledger entry on etcd: version 1 but not running")
		}
		return ledger.ClaimResult{}, err
	}
	s.mu.Lock()
	s.running[k] = entryRef{rev: kv.ModRevision, e: e, limit: e.reserve, uncounted: e.uncounted}
	s.mu.Unlock()
	return ledger.ClaimResult{Found: true, Record: ledger.Record{Expires: e.expires}}, nil
}

// claimHeld answers a Claim whose transaction found k claimed or its entry
// written more than once (r: its Else): Done with a done entry; Lost, by
// a second transaction, for a running entry without a claimer (one whose
// Running moved it to a later lease, FLEET-11); else Busy.
func (s *Store) claimHeld(k ledger.Key, lease clientv3.LeaseID, r *clientv3.TxnResponse) (ledger.ClaimResult, error) {
	ks := keysOf(s.prefix, k)
	c := one(r.Responses[1])
	if kv := one(r.Responses[0]); kv != nil && (kv.Version >= 2 || c == nil) {
		e, err := decodeEntry(kv.Value)
		if err != nil {
			return ledger.ClaimResult{}, err
		}
		if e.state == stateDone {
			return ledger.ClaimResult{Found: true, Record: ledger.Record{Reply: e.reply, Expires: e.expires}}, nil
		}
		if c == nil {
			return s.claimLost(k, lease, kv)
		}
	}
	if c != nil && (c.Lease == int64(clientv3.NoLease) || clientv3.LeaseID(c.Lease) != lease && !s.sessionLease(clientv3.LeaseID(c.Lease))) {
		return s.claimUnheld(k, c, r.Header.Revision)
	}
	if c != nil && clientv3.LeaseID(c.Lease) == lease {
		// Our own claim, which this process no longer tracks (an Unclaim
		// that did not reach etcd, or a Claim whose answer was lost): undo
		// it as queued, else give up the claim alone, and claim again.
		s.mu.Lock()
		_, tracked := s.claims[k]
		s.mu.Unlock()
		// An Unclaim or clean-up of k that runs now (busy) is waited
		// for: deleting the claim under it would leave its unrun entry
		// claimless, answered "outcome unknown" (FLEET-21).
		if !tracked {
			if queued, busy := s.cleaner.take(k); !busy {
				if !namesClaim(queued, c) {
					if len(queued) > 0 { // else taken as one run all the same
						s.cleaner.also(k)
					}
					// With its entry only if its Claim's answer was lost (the
					// claim applied after its cleanup looked): else a handler
					// may have run under it. A lost claim's clean-up queued
					// for another value (not applied yet) stays queued: it
					// never stands for this one (FLEET-31).
					queued = append(queued, cleanup{k: k, rev: c.CreateRevision, entry: s.cleaner.wasLost(string(c.Value))})
				}
				failed := false
				for _, q := range queued {
					err := s.clean(q)
					if err == errClaimUnseen {
						s.cleaner.park(q)
						continue
					}
					failed = failed || err != nil
					s.cleaner.end(q, err == nil)
				}
				if !failed { // gone: claim again at once
					ch := make(chan struct{})
					close(ch)
					return ledger.ClaimResult{Wait: ch}, nil
				}
				// Still there: wait as for another's claim, never a tight
				// loop of claims (FLEET-17).
			}
		}
	}
	return ledger.ClaimResult{Wait: s.waitFor(ks.claim, r.Header.Revision+1)}, nil
}

// claimUnheld answers a Claim of k that found c, a claim key no live
// node holds: one without a lease (FLEET-38), or one under a lease that
// etcd granted longer than any session lease (sessionLease, FLEET-40).
// Every node writes its claims under its session lease (grantedID never
// yields NoLease), so a writer under the prefix, or a tool that copied
// keys without their leases, made it, and nothing would delete it before
// its lease ends, if ever (the message Busy on every node until then). It
// is deleted in one transaction while it is the key read (its create and
// mod revisions) and still has the lease read, and the copy claims again
// at once: Fresh with no entry, Lost with a running one (never a second
// run: the entry stays), Done with a done one. A claim this process
// tracks under that create revision is its own (its lease changed by
// such a writer): kept, as one changed since is, and waited on as
// another's claim (FLEET-17: never a tight loop). The lease itself is
// left alone: it may hold keys that are not the ledger's.
func (s *Store) claimUnheld(k ledger.Key, c *mvccpb.KeyValue, rev int64) (ledger.ClaimResult, error) {
	key := keysOf(s.prefix, k).claim
	s.mu.Lock()
	ci, tracked := s.claims[k]
	s.mu.Unlock()
	if !tracked || ci.rev != c.CreateRevision {
		then := []clientv3.Op{clientv3.OpDelete(key)}
		var r *clientv3.TxnResponse
		err := s.call("claim", func(ctx context.Context) (err error) {
			r, err = s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", c.CreateRevision),
				clientv3.Compare(clientv3.ModRevision(key), "=", c.ModRevision),
				clientv3.Compare(clientv3.LeaseValue(key), "=", clientv3.LeaseID(c.Lease))).Then(then...).Commit()
			if err == nil {
				err = replyFits(r, then, nil) // FLEET-28
			}
			return err
		})
		if err != nil {
			return ledger.ClaimResult{}, err
		}
		if r.Succeeded { // gone: claim again at once
			ch := make(chan struct{})
			close(ch)
			return ledger.ClaimResult{Wait: ch}, nil
		}
	}
	return ledger.ClaimResult{Wait: s.waitFor(key, rev+1)}, nil
}

// maxSessionLike bounds the leases sessionLease remembers: a writer under
// the prefix may attach claims to any number of leases.
const maxSessionLike = 1024

// sessionLease reports whether id, the lease of another process's claim,
// may be a node's session lease: etcd granted it (LeaseTimeToLive) a TTL
// no longer than twice this process's own session lease (the fleet's
// nodes share one SessionTTL; the margin spares a node configured a
// little longer, or a member that raised a grant to its own minimum:
// FLEET-42). A longer lease
// (a bucket's, or any writer's, of years) is no node's session: the
// claim under it would be waited on, on every node, until that lease
// ends (docs/SPEC-DECISIONS.md FLEET-40). A lookup that fails (etcd
// not answering, or refusing it), or a lease already gone (etcd deletes
// the claim with it), is taken as a session's: the claim is waited on,
// as before. A lease found no longer, or not looked up, is remembered
// and looked up again at most once per SessionTTL: one call per live
// node, not per claim (a lease ID a writer has etcd grant again is found
// within that time).
func (s *Store) sessionLease(id clientv3.LeaseID) bool {
	now := time.Now()
	s.mu.Lock()
	at, ok := s.sessionLike[id]
	s.mu.Unlock()
	own := s.sess.grantedTTL()
	if ok && now.Sub(at) < s.o.SessionTTL || own <= 0 {
		return true
	}
	var r *clientv3.LeaseTimeToLiveResponse
	err := s.call("lease", func(ctx context.Context) (err error) {
		r, err = s.cli.TimeToLive(ctx, id)
		if err == nil && (r == nil || r.ID != id) {
			err = badReply("a lease's time to live for another lease") // FLEET-28
		}
		return err
	})
	if err == nil && r.TTL >= 0 && r.GrantedTTL > 2*own {
		return false
	}
	s.mu.Lock()
	if s.sessionLike == nil || len(s.sessionLike) >= maxSessionLike {
		s.sessionLike = map[clientv3.LeaseID]time.Time{}
	}
	s.sessionLike[id] = now
	s.mu.Unlock()
	return true
}

// claimLost claims k's running entry kv, which no process claims: one
// transaction, while the entry is unchanged and unclaimed. Another
// process that got there first makes it Busy (claim again at once).
func (s *Store) claimLost(k ledger.Key, lease clientv3.LeaseID, kv *mvccpb.KeyValue) (ledger.ClaimResult, error) {
	ks := keysOf(s.prefix, k)
	token := s.node + "." + strconv.FormatUint(s.seq.Add(1), 10)
	var r *clientv3.TxnResponse
	then := []clientv3.Op{clientv3.OpPut(ks.claim, token, clientv3.WithLease(lease))}
	err := s.call("claim", func(ctx context.Context) (err error) {
		r, err = s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", 0),
			clientv3.Compare(clientv3.ModRevision(ks.entry), "=", kv.ModRevision)).
			Then(then...).Commit()
		if err == nil {
			err = replyFits(r, then, nil) // FLEET-28
		}
		return err
	})
	if err != nil {
		c := cleanup{k: k, token: token} // the claim alone: the entry may be a run's
		if e, derr := decodeEntry(kv.Value); derr == nil {
			c.until = e.expires.Add(s.o.MaxClockSkew).Unix() // applied late: FLEET-31
		}
		s.cleaner.add(c)
		return ledger.ClaimResult{}, err
	}
	if !r.Succeeded {
		ch := make(chan struct{})
		close(ch)
		return ledger.ClaimResult{Wait: ch}, nil
	}
	s.mu.Lock()
	s.claims[k] = claimInfo{lease: lease, rev: r.Header.Revision, token: token, ran: true}
	s.mu.Unlock()
	return s.foundRunning(k, kv)
}

// namesClaim reports whether one of the clean-ups qs is of the claim c:
// by its create revision, or by its value (a lost claim's, FLEET-31).
func namesClaim(qs []cleanup, c *mvccpb.KeyValue) bool {
	for _, q := range qs {
		if q.rev == c.CreateRevision || q.rev == 0 && q.token == string(c.Value) {
			return true
		}
	}
	return false
}

// one returns the only key-value of a range response, or nil.
func one(op *pb.ResponseOp) *mvccpb.KeyValue {
	rr := op.GetResponseRange()
	if rr == nil || len(rr.Kvs) != 1 {
		return nil
	}
	return rr.Kvs[0]
}

// waitFor returns a channel that closes when the claim key goes (a
// delete of it from revision rev on, or a watch that fails), or after
// WaitPoll, whichever comes first. A put of a claim held is no change the
// copy waits for (every claim is created only where none is, so a new
// one comes after a delete): a writer under the prefix rewriting the key
// would otherwise send every waiting copy, on every node, back to Claim
// at each write, one etcd transaction per event (FLEET-32).
func (s *Store) waitFor(key string, rev int64) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(s.bg), s.o.WaitPoll)
		defer cancel()
		for w := range s.cli.Watch(ctx, key, clientv3.WithRev(rev)) {
			if w.Err() != nil || claimGone(w.Events) {
				return
			}
		}
	}()
	return ch
}

// claimGone reports whether events hold a delete of the claim key.
func claimGone(evs []*clientv3.Event) bool {
	for _, ev := range evs {
		if ev.Type == mvccpb.DELETE {
			return true
		}
	}
	return false
}
