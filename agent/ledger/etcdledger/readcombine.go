package etcdledger

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// readFlights is how many combined reads one process keeps in flight.
const readFlights = 2

// readReq is the linearizable read of one key (a claim's confirmation
// before its handler starts, FLEET-11).
type readReq struct {
	op   string
	key  string
	dl   time.Time // its deadline: now + OpTimeout when it is made
	done chan struct{}
	kv   *mvccpb.KeyValue // nil: absent
	err  error
	// alone: etcd refused the combined read for its size; the caller
	// reads its key on its own, by its own deadline.
	alone bool
}

// reader reads the keys of concurrent readReqs together, as one read-only
// etcd transaction of one Get each: etcd serves it as one linearizable
// read (its read index: a heartbeat round of the leader, no Raft
// proposal, nothing written), where each alone was a read of its own
// (docs/SPEC-DECISIONS.md FLEET-12). Each key's answer is what its own
// Get would have answered at the transaction's revision.
type reader struct {
	s *Store
	batchQueue[*readReq]
}

// getKey reads key linearizably, with other keys read at the same time:
// its key-value, or nil when it is absent.
func (s *Store) getKey(op, key string) (*mvccpb.KeyValue, error) {
	r := &readReq{op: op, key: key, dl: time.Now().Add(s.o.OpTimeout), done: make(chan struct{})}
	rd := &s.reads
	if rd.add(r, readFlights) {
		go rd.run(rd.take, rd.read)
	}
	// Answered by its own deadline: a combined read runs until the latest
	// of its batch's.
	timer := time.NewTimer(time.Until(r.dl))
	defer timer.Stop()
	select {
	case <-r.done:
	case <-timer.C:
		select {
		case <-r.done:
			break
		default:
			return nil, amp.Named(amp.CodeUnavailable, ledger.ErrLedgerIO, "the etcd ledger did not answer in time (%s)", op)
		}
	}
	if r.alone {
		s.readAlone(r)
	}
	return r.kv, r.err
}

// readAlone reads r's key on its own, by r's deadline.
func (s *Store) readAlone(r *readReq) {
	r.err = s.callBy(r.op, r.dl, func(ctx context.Context) error {
		g, err := s.cli.Get(ctx, r.key)
		if err == nil {
			err = getFits(g, clientv3.OpGet(r.key)) // FLEET-28
		}
		if err == nil && len(g.Kvs) == 1 {
			r.kv = g.Kvs[0]
		}
		return err
	})
}

// take removes from the queue the next batch: the waiting reads in
// order, up to combineMaxOps of them. Callers hold rd.mu.
func (rd *reader) take() []*readReq {
	n := min(len(rd.q), combineMaxOps)
	batch := rd.q[:n:n]
	rd.q = rd.q[n:]
	return batch
}

// read reads batch: alone when it is one key, else in one read-only
// transaction (each alone if etcd refuses that one for its size).
func (rd *reader) read(batch []*readReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	if len(batch) > 1 {
		ops := make([]clientv3.Op, len(batch))
		dl := batch[0].dl
		for i, r := range batch {
			ops[i] = clientv3.OpGet(r.key)
			if r.dl.After(dl) {
				dl = r.dl
			}
		}
		var tr *clientv3.TxnResponse
		err := rd.s.callBy(batch[0].op, dl, func(ctx context.Context) (err error) {
			tr, err = rd.s.cli.Txn(ctx).Then(ops...).Commit()
			return err
		})
		if err == nil {
			err = replyFits(tr, ops, nil) // FLEET-28
		}
		if !refusedUnwritten(err) {
			for i, r := range batch {
				if r.err = err; err == nil {
					r.kv = one(tr.Responses[i])
				}
			}
			return
		}
	}
	if len(batch) > 1 {
		for _, r := range batch {
			r.alone = true // etcd refused the batch for its size: each read by its caller, at once
		}
		return
	}
	rd.s.readAlone(batch[0])
}
