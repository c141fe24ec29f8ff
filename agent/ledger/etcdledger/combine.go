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
// FLEET-12): etcd refuses a transaction of more than 128 comparisons or
// operations (its --max-txn-ops default), a nested transaction with more
// than 128 less the larger of those two counts of the transaction around
// it, and a request of more than 1.5 MiB (--max-request-bytes).
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
	// of a transaction nested in then: etcd allows it only where the
	// combined transaction's own count leaves room for it.
	nest int
	dl   time.Time // its deadline: now + OpTimeout when it is made

	done  chan struct{}
	r     *clientv3.TxnResponse
	err   error
	alone bool // the combined transaction failed: commit it alone
}

// combiner commits the transactions of concurrent keys together, as one
// etcd transaction whose comparisons are all of theirs and whose
// operations are all of theirs (in order): a group commit, one Raft
// proposal (one WAL fdatasync per member) for many messages. It succeeds
// only where every key's own transaction would have succeeded, with the
// same writes at one revision; when it does not succeed, each key commits
// its own transaction again alone (with its Else), as if it had never been
// combined. Two transactions that touch one key (the entry or claim of one
// message, or the usage counters of one principal) never share a combined
// transaction, so that none reads or compares what another writes.
type combiner struct {
	s *Store
	batchQueue[*txnReq]
}

// txn commits the transaction of k (its principal's usage prefix u):
// combined with others' when several are waiting, else alone. Its answer
// is what the transaction alone would have answered: on success the
// results of then (at the combined revision), on failure those of els.
func (s *Store) txn(op string, k ledger.Key, u string, cmp []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	t := &txnReq{op: op, k: k, usage: u, cmp: cmp, then: then, els: els, dl: time.Now().Add(s.o.OpTimeout), done: make(chan struct{})}
	t.size, t.nest = opsSize(then)
	c := &s.combine
	if c.add(t, combineFlights) {
		go c.run(c.take, c.commit)
	}
	<-t.done
	if t.alone {
		return s.txnAlone(t)
	}
	return t.r, t.err
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
	ops, cmps, size, nest := 0, 0, 0, 0
	for _, t := range c.q {
		ek := keysOf("", t.k).entry
		o, cm, n := ops+len(t.then), cmps+len(t.cmp), max(nest, t.nest)
		// etcd checks a nested transaction against what the combined
		// one leaves of --max-txn-ops (its Else is empty); the first is
		// always taken (a batch of one is committed alone)
		fits := len(batch) == 0 || len(batch) < combineMaxMembers &&
			max(o, cm)+n <= combineMaxOps && size+t.size <= combineMaxBytes
		if !fits || touched[ek] || touched[t.usage] {
			rest = append(rest, t)
			continue
		}
		touched[ek], touched[t.usage] = true, true
		ops, cmps, size, nest = o, cm, size+t.size, n
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
	var cmp []clientv3.Cmp
	var then []clientv3.Op
	dl := batch[0].dl
	for _, t := range batch {
		cmp, then = append(cmp, t.cmp...), append(then, t.then...)
		if t.dl.After(dl) {
			dl = t.dl
		}
	}
	var r *clientv3.TxnResponse
	err := c.s.callBy(batch[0].op, dl, func(ctx context.Context) (err error) {
		r, err = c.s.cli.Txn(ctx).If(cmp...).Then(then...).Commit()
		return err
	})
	switch {
	case leaseNotFound(err), refusedUnwritten(err), err == nil && !r.Succeeded:
		// One of them compared false, wrote under a lease etcd no longer
		// has, or etcd refused the combined request for its size (a
		// member's --max-txn-ops or --max-request-bytes below the
		// defaults): nothing was written; each commits alone.
		for _, t := range batch {
			t.alone = true
		}
	case err == nil && len(r.Responses) != len(then):
		err = amp.Named(amp.CodeUnavailable, ErrBadValue, "etcd answered %d results for %d operations", len(r.Responses), len(then))
		fallthrough
	case err != nil:
		for _, t := range batch {
			t.err = err // the answer of every one is lost alike
		}
	default:
		off := 0
		for _, t := range batch {
			t.r = &clientv3.TxnResponse{Header: r.Header, Succeeded: true, Responses: r.Responses[off : off+len(t.then)]}
			off += len(t.then)
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
	mu   sync.Mutex
	key  string
	refs int // guarded by principalLocks.mu
	// snap: the principal's counters as of a revision (nil: unknown).
	snap *usageSnap
}

// lock locks the principal whose usage prefix is u.
func (p *principalLocks) lock(u string) *principalLock {
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]*principalLock{}
	}
	pl, ok := p.m[u]
	if !ok {
		pl = &principalLock{key: u}
		p.m[u] = pl
	}
	pl.refs++
	p.mu.Unlock()
	pl.mu.Lock()
	return pl
}

// unlock unlocks pl, forgetting it when no one else waits for it and
// more than maxIdlePrincipals are kept.
func (p *principalLocks) unlock(pl *principalLock) {
	pl.mu.Unlock()
	p.mu.Lock()
	if pl.refs--; pl.refs == 0 && len(p.m) > maxIdlePrincipals {
		delete(p.m, pl.key)
	}
	p.mu.Unlock()
}

// learn sets pl's counters from the range read of the principal's prefix
// that a transaction made after its writes, at revision rev (unknown if
// the read is missing or refused).
func (pl *principalLock) learn(op *pb.ResponseOp, rev int64) {
	if op == nil {
		pl.snap = nil
		return
	}
	snap, err := snapOf(op.GetResponseRange(), rev)
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
