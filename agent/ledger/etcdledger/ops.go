package etcdledger

import (
	"context"
	"crypto/sha256"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// Claim implements ledger.SharedStore with one transaction: when no
// process claims k and its entry is not done (version < 2), the claim key
// is created under this process's session lease; otherwise the entry (and
// the claim) are read. A claim held by another process gives Wait, which
// closes on the next change of the claim key or after WaitPoll.
func (s *Store) Claim(k ledger.Key, _ time.Time) (ledger.ClaimResult, error) {
	ks := keysOf(s.prefix, k)
	lease, err := s.sess.lease()
	if err != nil {
		return ledger.ClaimResult{}, err
	}
	u := usagePrefix(s.prefix, hash16(s.principalOf(k.Sender)))
	r, err := s.txn("claim", k, u, []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", 0),
		clientv3.Compare(clientv3.Version(ks.entry), "<", 2),
	}, []clientv3.Op{
		clientv3.OpPut(ks.claim, s.node, clientv3.WithLease(lease)),
		clientv3.OpGet(ks.entry),
		clientv3.OpGet(u, clientv3.WithPrefix()),
	}, []clientv3.Op{
		clientv3.OpGet(ks.entry),
		clientv3.OpGet(ks.claim),
	})
	if err != nil {
		return ledger.ClaimResult{}, err
	}
	if r.Succeeded {
		snap, _ := snapOf(r.Responses[2].GetResponseRange(), r.Header.Revision)
		kv := one(r.Responses[1])
		s.mu.Lock()
		// The claim was created by this transaction: at its revision.
		s.claims[k] = claimInfo{lease: lease, rev: r.Header.Revision, usage: snap, ran: kv != nil}
		s.mu.Unlock()
		if kv == nil {
			return ledger.ClaimResult{}, nil // fresh
		}
		e, err := decodeEntry(kv.Value)
		if err != nil || e.state != stateRunning {
			s.Unclaim(k)
			if err == nil {
				err = amp.Named(amp.CodeUnavailable, ErrBadValue, "ledger entry on etcd: version 1 but not running")
			}
			return ledger.ClaimResult{}, err
		}
		// Running, and its claimer is gone: the outcome is unknown.
		s.mu.Lock()
		s.running[k] = entryRef{rev: kv.ModRevision, e: e}
		s.mu.Unlock()
		return ledger.ClaimResult{Found: true, Record: ledger.Record{Expires: e.expires}}, nil
	}
	if kv := one(r.Responses[0]); kv != nil && kv.Version >= 2 {
		e, err := decodeEntry(kv.Value)
		if err != nil {
			return ledger.ClaimResult{}, err
		}
		if e.state == stateDone {
			return ledger.ClaimResult{Found: true, Record: ledger.Record{Reply: e.reply, Expires: e.expires}}, nil
		}
	}
	if c := one(r.Responses[1]); c != nil && clientv3.LeaseID(c.Lease) == lease {
		// Our own claim, which this process no longer tracks (an Unclaim
		// that did not reach etcd): give it up and claim again.
		s.mu.Lock()
		_, tracked := s.claims[k]
		s.mu.Unlock()
		if !tracked {
			_ = s.clean(cleanup{k: k, rev: c.CreateRevision})
			ch := make(chan struct{})
			close(ch)
			return ledger.ClaimResult{Wait: ch}, nil
		}
	}
	return ledger.ClaimResult{Wait: s.waitFor(ks.claim, r.Header.Revision+1)}, nil
}

// one returns the only key-value of a range response, or nil.
func one(op *pb.ResponseOp) *mvccpb.KeyValue {
	rr := op.GetResponseRange()
	if rr == nil || len(rr.Kvs) != 1 {
		return nil
	}
	return rr.Kvs[0]
}

// waitFor returns a channel that closes on the first change of key from
// revision rev on, or after WaitPoll, whichever comes first.
func (s *Store) waitFor(key string, rev int64) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(s.bg), s.o.WaitPoll)
		defer cancel()
		for w := range s.cli.Watch(ctx, key, clientv3.WithRev(rev)) {
			if w.Err() != nil || len(w.Events) > 0 {
				return
			}
		}
	}()
	return ch
}

// Unclaim implements ledger.SharedStore: the claim key is deleted if it is
// still the claim this process made (its create revision: never a later
// claim of the key under the same session lease); after a Running whose
// answer was lost, the entry it may have created goes with it (FLEET-7).
// A delete that fails is queued and retried, with a backoff, for as long
// as the process lives (cleaner): a live node never blocks a key.
func (s *Store) Unclaim(k ledger.Key) {
	s.mu.Lock()
	ci, ok := s.claims[k]
	delete(s.claims, k)
	delete(s.running, k)
	s.mu.Unlock()
	if !ok {
		return
	}
	c := cleanup{k: k, rev: ci.rev, entry: ci.unsure && !ci.ran}
	if s.clean(c) != nil {
		s.cleaner.add(c)
	}
}

// MarkRunning implements ledger.Store.
func (s *Store) MarkRunning(k ledger.Key, expires time.Time) error {
	return s.MarkRunningWithin(k, expires, 0)
}

// reserveOf is the reservation of an entry marked with reserve.
func (s *Store) reserveOf(reserve int64) int64 {
	if reserve <= 0 {
		reserve = s.lim.ReplyReserve
	}
	return min(max(reserve, ledger.MinReplyReserve), MaxReply)
}

// MarkRunningWithin implements ledger.ReservingStore: one transaction
// creates the entry only if it is absent (create revision 0), while this
// process's claim holds (its lease), and adds the entry's cost to the
// principal's usage counter of the entry's expiry bucket, compared on the
// mod revisions of all the principal's counters (no other writer since
// they were summed); a conflict is retried (at most 16 times).
func (s *Store) MarkRunningWithin(k ledger.Key, expires time.Time, reserve int64) error {
	reserve = s.reserveOf(reserve)
	cost := entryCost(k, reserve)
	now := s.o.Now()
	s.mu.Lock()
	s.pruneTally(now)
	full := s.usage.Bytes+cost > s.lim.Budget
	ci, claimed := s.claims[k]
	s.mu.Unlock()
	if full {
		return amp.Named(amp.CodeOverloaded, ledger.ErrFull, "the agent's idempotency ledger is full; retry later")
	}
	ph := sha256.Sum256([]byte(s.principalOf(k.Sender)))
	e := entry{state: stateRunning, expires: expires, reserve: reserve, end: bucketEnd(now, expires)}
	copy(e.principal[:], ph[:16])
	phex := hash16(s.principalOf(k.Sender))
	ks := keysOf(s.prefix, k)
	counter := usageKey(s.prefix, phex, e.end)
	pl := s.hot.lock(usagePrefix(s.prefix, phex))
	defer s.hot.unlock(pl)
	for attempt := 0; attempt < maxRetries; attempt++ {
		lease, err := s.leases.get(e.end)
		if err != nil {
			return err
		}
		snap := ci.usage
		if pl.snap != nil && (snap == nil || pl.snap.rev > snap.rev) {
			snap = pl.snap // this process's own later write of the counters
		}
		if attempt > 0 || snap == nil {
			if snap, err = s.readUsage(usagePrefix(s.prefix, phex)); err != nil {
				return err
			}
			pl.snap = snap
		}
		sum, cur, rev := snap.sum, snap.vals[counter], snap.rev
		if sum+cost > s.lim.PerCaller {
			return amp.Named(amp.CodeRateLimited, ledger.ErrCallerFull, "this caller's share of the agent's idempotency ledger is used up (callers the policy does not name share one); retry later")
		}
		cmp := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(ks.entry), "=", 0),
			clientv3.Compare(clientv3.ModRevision(usagePrefix(s.prefix, phex)), "<", rev+1).WithPrefix()}
		if claimed {
			cmp = append(cmp, clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", ci.rev))
		}
		r, err := s.txn("mark", k, usagePrefix(s.prefix, phex), cmp, []clientv3.Op{
			clientv3.OpPut(ks.entry, string(e.encode()), clientv3.WithLease(lease)),
			clientv3.OpPut(counter, itoa(cur+cost), clientv3.WithLease(lease)),
		}, []clientv3.Op{clientv3.OpGet(ks.entry), clientv3.OpGet(ks.claim)})
		if amp.NameOf(err) == ledger.ErrLedgerIO && rpctypes.Error(errorsCause(err)) == rpctypes.ErrLeaseNotFound {
			s.leases.drop(e.end)
			continue
		}
		if err != nil {
			if claimed {
				s.setClaim(k, ci.rev, func(c *claimInfo) { c.unsure = true })
			}
			return err
		}
		if r.Succeeded {
			pl.wrote(snap, counter, cur+cost, r.Header.Revision)
			s.mu.Lock()
			s.running[k] = entryRef{rev: r.Header.Revision, e: e, charged: true, counter: cur + cost, counterRev: r.Header.Revision}
			s.charge(e.end, cost, 1)
			if c, ok := s.claims[k]; ok && c.rev == ci.rev {
				c.ran = true
				s.claims[k] = c
			}
			s.mu.Unlock()
			return nil
		}
		if one(r.Responses[0]) != nil {
			return amp.Named(amp.CodeInternalError, ledger.ErrTicketUsed, "ledger entry already exists")
		}
		if c := one(r.Responses[1]); claimed && (c == nil || c.CreateRevision != ci.rev) {
			return amp.Named(amp.CodeUnavailable, ErrClaimLost, "this agent's claim on the message expired before its handler could start; retry")
		}
		contended(attempt)
	}
	return amp.Named(amp.CodeUnavailable, ErrContended, "the idempotency ledger is contended for this caller; retry")
}

// setClaim applies f to this process's claim on k if it is still the one
// created at rev.
func (s *Store) setClaim(k ledger.Key, rev int64, f func(*claimInfo)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.claims[k]; ok && c.rev == rev {
		f(&c)
		s.claims[k] = c
	}
}

// charge adds to this process's tally. Callers hold s.mu.
func (s *Store) charge(end, bytes int64, entries int) {
	b := s.tally[end]
	// Never below zero: a refund gives back at most what was charged here.
	nb, ne := max(b.bytes+bytes, 0), max(b.entries+entries, 0)
	s.usage.Bytes = max(s.usage.Bytes+nb-b.bytes, 0)
	s.usage.Entries = max(s.usage.Entries+ne-b.entries, 0)
	b.bytes, b.entries = nb, ne
	s.tally[end] = b
}

// readUsage reads the counters under prefix.
func (s *Store) readUsage(prefix string) (snap *usageSnap, err error) {
	err = s.call("mark", func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			return err
		}
		snap, err = snapOf((*pb.RangeResponse)(r), r.Header.Revision)
		return err
	})
	return snap, err
}

// snapOf sums the usage counters of a range read at revision rev.
func snapOf(r *pb.RangeResponse, rev int64) (*usageSnap, error) {
	snap := &usageSnap{rev: rev, vals: map[string]int64{}}
	if r == nil {
		return nil, amp.Named(amp.CodeUnavailable, ErrBadValue, "no usage counters in the answer")
	}
	for _, kv := range r.Kvs {
		n, err := decodeCounter(kv.Value)
		if err != nil {
			return nil, err
		}
		if snap.sum, err = addCounter(snap.sum, n); err != nil {
			return nil, err
		}
		snap.vals[string(kv.Key)] = n
	}
	return snap, nil
}

// contended waits a little before the next try of a transaction whose
// counters changed: 1 ms more for each try.
func contended(attempt int) { time.Sleep(time.Duration(attempt+1) * time.Millisecond) }

// Finish implements ledger.Store: one transaction records the reply in
// the running entry (its lease kept) while the entry is the one this
// process marked or found running and its claim holds, gives back to the
// usage counter what of the reservation the reply does not use, and
// deletes the claim. A counter that keeps changing is left charged (after
// 16 tries) rather than the reply unrecorded.
func (s *Store) Finish(k ledger.Key, reply []byte) error {
	s.mu.Lock()
	ref, ok := s.running[k]
	ci, claimed := s.claims[k]
	s.mu.Unlock()
	ks := keysOf(s.prefix, k)
	if !ok {
		return amp.Named(amp.CodeInternalError, ledger.ErrTicketUsed, "ledger entry is not running here")
	}
	if int64(len(reply)) > ref.e.reserve {
		return amp.Named(amp.CodeOverloaded, ledger.ErrReplyTooLarge,
			"the reply is larger than the idempotency ledger reserved for it (%d bytes)", ref.e.reserve)
	}
	done := ref.e
	done.state, done.reply = stateDone, reply
	refund := ref.e.reserve - int64(len(reply))
	counter := usagePrefix(s.prefix, hexOf(ref.e.principal)) + itoa(ref.e.end)
	pl := s.hot.lock(usagePrefix(s.prefix, hexOf(ref.e.principal)))
	defer s.hot.unlock(pl)
	for attempt := 0; ; attempt++ {
		cmp := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(ks.entry), "=", ref.rev)}
		if claimed {
			cmp = append(cmp, clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", ci.rev))
		}
		ops := []clientv3.Op{clientv3.OpPut(ks.entry, string(done.encode()), clientv3.WithIgnoreLease()), clientv3.OpDelete(ks.claim)}
		if attempt < maxRetries && refund > 0 {
			cur, rev := ref.counter, ref.counterRev // as marked here: the first guess
			if c, ok := pl.known[counter]; ok && c.rev > rev {
				cur, rev = c.n, c.rev // this process's own later write of it
			}
			if attempt > 0 || rev == 0 {
				var err error
				if cur, rev, err = s.readCounter(counter); err != nil {
					return err
				}
				pl.known[counter] = knownCounter{n: cur, rev: rev}
			}
			if rev > 0 {
				cmp = append(cmp, clientv3.Compare(clientv3.ModRevision(counter), "=", rev))
				ops = append(ops, clientv3.OpPut(counter, itoa(max(cur-refund, 0)), clientv3.WithIgnoreLease()))
			}
		}
		r, err := s.txn("finish", k, usagePrefix(s.prefix, hexOf(ref.e.principal)), cmp, ops,
			[]clientv3.Op{clientv3.OpGet(ks.entry), clientv3.OpGet(ks.claim)})
		if err != nil {
			return err
		}
		if r.Succeeded {
			if len(ops) > 2 {
				pl.snap = nil // one counter compared: the others are not known
				pl.known[counter] = knownCounter{n: opsCounter(ops[2]), rev: r.Header.Revision}
			}
			s.mu.Lock()
			delete(s.running, k)
			delete(s.claims, k)
			if len(ops) > 2 && ref.charged { // only what this process charged
				s.charge(ref.e.end, -refund, 0)
			}
			s.mu.Unlock()
			return nil
		}
		e := one(r.Responses[0])
		if e == nil {
			s.mu.Lock()
			delete(s.running, k)
			s.mu.Unlock()
			return amp.Named(amp.CodeInternalError, ledger.ErrTicketUsed, "ledger entry went missing (expired)")
		}
		if c := one(r.Responses[1]); e.ModRevision != ref.rev || claimed && (c == nil || c.CreateRevision != ci.rev) {
			return amp.Named(amp.CodeUnavailable, ErrClaimLost, "this agent's claim on the message expired while its handler ran; a retry is answered \"outcome unknown\"")
		}
		if attempt >= maxRetries {
			return amp.Named(amp.CodeUnavailable, ErrContended, "the idempotency ledger is contended for this caller")
		}
		contended(attempt)
	}
}

// readCounter reads one usage counter (rev 0: absent).
func (s *Store) readCounter(key string) (n, rev int64, err error) {
	err = s.call("finish", func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, key)
		if err != nil || len(r.Kvs) == 0 {
			return err
		}
		rev = r.Kvs[0].ModRevision
		n, err = decodeCounter(r.Kvs[0].Value)
		return err
	})
	return n, rev, err
}
