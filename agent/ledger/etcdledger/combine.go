package etcdledger

import (
	"context"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// Bounds of one combined transaction (docs/SPEC-DECISIONS.md FLEET-10,
// FLEET-12, FLEET-16): etcd refuses a transaction of more than 128
// comparisons or operations (its --max-txn-ops default), a nested
// transaction with more than 128 less the larger of those two counts of
// the transaction around it, and a request of more than 1.5 MiB
// (--max-request-bytes).
const (
	combineMaxOps     = 128
	combineMaxMembers = 32
	combineMaxBytes   = 256 << 10
	// combineFlights is how many combined transactions one process keeps
	// in flight at once: while one waits for etcd's commit, the next
	// gathers the writes that arrive meanwhile.
	combineFlights = 2
)

// txnReq is one key's transaction (Claim, MarkRunning or Finish), as
// ops.go would commit it alone.
type txnReq struct {
	op    string
	k     ledger.Key
	usage string // the usage prefix of k's principal
	cmp   []clientv3.Cmp
	then  []clientv3.Op
	els   []clientv3.Op
	size  int
	// nest is the largest count (comparisons, Then or Else operations)
	// of a transaction nested in then or els: etcd allows it only where
	// the transactions around it leave room for it.
	nest int
	dl   time.Time // its deadline: now + OpTimeout when it is made

	done  chan struct{}
	r     *clientv3.TxnResponse
	err   error
	alone bool // the combined transaction failed: commit it alone
}

// combiner commits the transactions of concurrent keys together, as one
// etcd transaction without comparisons whose operations are their
// transactions, each nested whole (its comparisons, Then and Else): a
// group commit, one Raft proposal (one WAL fdatasync per member) for many
// messages, in which each key's transaction succeeds or fails on its own
// comparisons and answers its own Then or Else, at one revision, as it
// would have alone (FLEET-16: a copy of an answered message, whose
// comparison fails, no longer sends every other member again alone). Two
// transactions that touch one key (the entry or claim of one message, or
// the usage counters of one principal) never share a combined
// transaction, so that none reads or compares what another writes.
type combiner struct {
	s *Store
	batchQueue[*txnReq]
}

// txn commits the transaction of k (its principal's usage prefix u):
// combined with others' when several are waiting, else alone. Its answer
// is what the transaction alone would have answered: on success the
// results of then (at the combined revision), on failure those of els,
// of the shape asked (replyFits), else an error.
func (s *Store) txn(op string, k ledger.Key, u string, cmp []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	t := &txnReq{op: op, k: k, usage: u, cmp: cmp, then: then, els: els, dl: time.Now().Add(s.o.OpTimeout), done: make(chan struct{})}
	t.size, t.nest = opsSize(then)
	es, en := opsSize(els)
	t.size, t.nest = t.size+es, max(t.nest, en)
	c := &s.combine
	if c.add(t, combineFlights) {
		go c.run(c.take, c.commit)
	}
	<-t.done
	r, err := t.r, t.err
	if t.alone {
		r, err = s.txnAlone(t)
	}
	if err == nil {
		// Checked before any caller reads it (FLEET-28).
		err = replyFits(r, then, els)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// opsSize is the bytes of the keys and values of ops, those of nested
// transactions included, and the largest count of a nested transaction.
func opsSize(ops []clientv3.Op) (size, nest int) {
	for _, o := range ops {
		size += len(o.KeyBytes()) + len(o.ValueBytes())
		if o.IsTxn() {
			cmp, then, els := o.Txn()
			ts, tn := opsSize(then)
			es, en := opsSize(els)
			size += ts + es
			nest = max(nest, len(cmp), len(then), len(els), tn, en)
		}
	}
	return size, nest
}

// txnAlone commits t's own transaction, with its Else.
func (s *Store) txnAlone(t *txnReq) (r *clientv3.TxnResponse, err error) {
	err = s.call(t.op, func(ctx context.Context) error {
		r, err = s.cli.Txn(ctx).If(t.cmp...).Then(t.then...).Else(t.els...).Commit()
		return err
	})
	return r, err
}

// take removes from the queue the next batch: in order, every waiting
// transaction that touches no key of one taken before it, within the
// bounds. Callers hold c.mu.
func (c *combiner) take() []*txnReq {
	var batch []*txnReq
	var rest []*txnReq
	touched := map[string]bool{}
	width, size, nest := 0, 0, 0
	for _, t := range c.q {
		ek := keysOf("", t.k).entry
		w, n := max(width, len(t.cmp), len(t.then), len(t.els)), max(nest, t.nest)
		// etcd checks each member (nested in the combined transaction of
		// len(batch)+1 operations) against what the combined one leaves
		// of --max-txn-ops, and a transaction nested in a member against
		// what the member leaves of that; the first is always taken (a
		// batch of one is committed alone)
		fits := len(batch) == 0 || len(batch) < combineMaxMembers &&
			len(batch)+1+w+n <= combineMaxOps && size+t.size <= combineMaxBytes
		if !fits || touched[ek] || touched[t.usage] {
			rest = append(rest, t)
			continue
		}
		touched[ek], touched[t.usage] = true, true
		width, size, nest = w, size+t.size, n
		batch = append(batch, t)
	}
	c.q = rest
	return batch
}

// commit commits batch: alone when it is one transaction, else combined.
func (c *combiner) commit(batch []*txnReq) {
	defer func() {
		for _, t := range batch {
			close(t.done)
		}
	}()
	if len(batch) == 1 {
		t := batch[0]
		t.r, t.err = c.s.txnAlone(t)
		return
	}
	var then []clientv3.Op
	dl := batch[0].dl
	for _, t := range batch {
		then = append(then, clientv3.OpTxn(t.cmp, t.then, t.els))
		if t.dl.After(dl) {
			dl = t.dl
		}
	}
	var r *clientv3.TxnResponse
	err := c.s.callBy(batch[0].op, dl, func(ctx context.Context) (err error) {
		r, err = c.s.cli.Txn(ctx).Then(then...).Commit()
		return err
	})
	if err == nil && (!r.Succeeded || len(r.Responses) != len(batch)) {
		err = amp.Named(amp.CodeUnavailable, ErrBadValue, "etcd answered %d results for %d transactions", len(r.Responses), len(batch))
	}
	var in []*pb.TxnResponse
	if err == nil {
		for _, op := range r.Responses {
			if in = append(in, op.GetResponseTxn()); in[len(in)-1] == nil {
				err = amp.Named(amp.CodeUnavailable, ErrBadValue, "etcd answered a combined transaction without a member's result")
				break
			}
		}
	}
	switch {
	case leaseNotFound(err), refusedUnwritten(err):
		// One of them wrote under a lease etcd no longer has, or etcd
		// refused the combined request for its size (a member's
		// --max-txn-ops or --max-request-bytes below the defaults):
		// nothing was written; each commits alone.
		for _, t := range batch {
			t.alone = true
		}
	case err != nil:
		for _, t := range batch {
			t.err = err // the answer of every one is lost alike
		}
	default:
		for i, t := range batch {
			t.r = &clientv3.TxnResponse{Header: r.Header, Succeeded: in[i].Succeeded, Responses: in[i].Responses}
		}
	}
}

// maxIdlePrincipals bounds the principals whose counters a process keeps
// while none of their transactions waits or runs (the guess of the next
// Claim: FLEET-11).
const maxIdlePrincipals = 4096

// principalLocks serialise, within this process, the transactions that
// write one principal's usage counters (Claim, MarkRunning, Finish,
// Unclaim): the messages of one sender in flight at once would otherwise
// race on the same counter key, each compare failing on the others'
// writes (a hot spot of retries). Every such transaction also reads the
// principal's counters after its writes, at its revision: the holder
// starts from the counters as they were after this process's last write
// (exact unless another node wrote since: then its compare fails, and the
// counters come back with the failure). Entries are kept while a
// transaction of the principal waits or runs, and up to
// maxIdlePrincipals more.
type principalLocks struct {
	mu sync.Mutex
	m  map[string]*principalLock
}

// principalLock is one principal's lock and its counters as last known.
type principalLock struct {
	// held has room for one: sending locks, receiving unlocks. A lock
	// whose wait can end at a deadline (FLEET-15).
	held chan struct{}
	key  string
	refs int // guarded by principalLocks.mu
	// snap: the principal's counters as of a revision (nil: unknown).
	snap *usageSnap
}

// lock locks the principal whose usage prefix is u, waiting at most
// until dl (the deadline of the call that asks, counted from its arrival:
// FLEET-15); past it the call is refused, retryably (ErrContended), and
// never waits behind the others' etcd calls for longer than its own
// (Finish then records its reply without the lock: FLEET-20).
func (p *principalLocks) lock(u string, dl time.Time) (*principalLock, error) {
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]*principalLock{}
	}
	pl, ok := p.m[u]
	if !ok {
		pl = &principalLock{key: u, held: make(chan struct{}, 1)}
		p.m[u] = pl
	}
	pl.refs++
	p.mu.Unlock()
	select {
	case pl.held <- struct{}{}:
		return pl, nil
	default:
	}
	t := time.NewTimer(time.Until(dl))
	defer t.Stop()
	select {
	case pl.held <- struct{}{}:
		return pl, nil
	case <-t.C:
		p.release(pl)
		return nil, amp.Named(amp.CodeUnavailable, ErrContended,
			"this caller's messages wait for the idempotency ledger past its deadline; retry")
	}
}

// unlock unlocks pl.
func (p *principalLocks) unlock(pl *principalLock) {
	<-pl.held
	p.release(pl)
}

// release drops one reference to pl, forgetting it when no one else
// waits for it and more than maxIdlePrincipals are kept.
func (p *principalLocks) release(pl *principalLock) {
	p.mu.Lock()
	if pl.refs--; pl.refs == 0 && len(p.m) > maxIdlePrincipals {
		delete(p.m, pl.key)
	}
	p.mu.Unlock()
}

// learn sets pl's counters from the range read of the principal's prefix
// that a transaction of s made after its writes, at revision rev (unknown
// if the read is missing or refused).
func (pl *principalLock) learn(s *Store, op *pb.ResponseOp, rev int64) {
	if op == nil {
		pl.snap = nil
		return
	}
	snap, err := s.snapOf(op.GetResponseRange(), rev)
	if err != nil {
		snap = nil
	}
	pl.snap = snap
}

// guess is the value and mod revision of counter as last known, when
// that is later than rev (else n, rev unchanged).
func (pl *principalLock) guess(counter string, n, rev int64) (int64, int64) {
	if sn := pl.snap; sn != nil && sn.rev > rev {
		return sn.vals[counter], sn.mods[counter]
	}
	return n, rev
}
