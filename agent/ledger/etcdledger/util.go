package etcdledger

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// takeOff is the write that gives a refund back to a usage counter, whose
// value after it is n: a put keeping its lease, or, at 0, its delete
// (docs/SPEC-DECISIONS.md FLEET-19: nothing of a refused message stays).
// Every transaction that charges a counter compares that counter's own
// mod revision as well as the principal's prefix, so a deletion is seen
// where it matters (a stale guess of another counter only over-counts the
// sum, and a sum over the share is read again before any refusal).
func takeOff(counter string, n int64) clientv3.Op {
	if n <= 0 {
		return clientv3.OpDelete(counter)
	}
	return clientv3.OpPut(counter, itoa(n), clientv3.WithIgnoreLease())
}

func hexOf(b [16]byte) string { return hex.EncodeToString(b[:]) }

// errorsCause is the innermost error of err.
func errorsCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// leaseNotFound reports whether err is etcd's refusal of a write under a
// lease it no longer has (revoked, expired, or a restored cluster):
// nothing of that transaction was written.
func leaseNotFound(err error) bool {
	return err != nil && amp.NameOf(err) == ledger.ErrLedgerIO && rpctypes.Error(errorsCause(err)) == rpctypes.ErrLeaseNotFound
}

// refusedUnwritten reports whether err is etcd's refusal of a request for
// its shape before any of it was proposed: too many operations, or too
// large (a combined transaction over a member's --max-txn-ops or
// --max-request-bytes).
func refusedUnwritten(err error) bool {
	if err == nil || amp.NameOf(err) != ledger.ErrLedgerIO {
		return false
	}
	switch rpctypes.Error(errorsCause(err)) {
	case rpctypes.ErrTooManyOps, rpctypes.ErrRequestTooLarge:
		return true
	}
	return false
}

// replyFits checks r, etcd's answer to a transaction whose Then is then
// and Else els, against what was asked before any of it is used
// (docs/SPEC-DECISIONS.md FLEET-28): a header with a revision, one result
// per operation of the branch it took, each of its operation's kind, and
// each read's key-values its own (readFits), in nested transactions too.
// An answer of another shape (a misbehaving member, a proxy) is
// ErrBadValue (5002, retryable), its transaction's answer as good as
// lost: never an index past the results, nor a key-value of another key
// read as the one asked.
func replyFits(r *clientv3.TxnResponse, then, els []clientv3.Op) error {
	if r == nil || r.Header == nil || r.Header.Revision <= 0 {
		return badReply("a transaction without its header")
	}
	return resultsFit(r.Succeeded, r.Responses, then, els)
}

// resultsFit checks the results got of a transaction (nested or not)
// that took Then (ok) or Else.
func resultsFit(ok bool, got []*pb.ResponseOp, then, els []clientv3.Op) error {
	ops := els
	if ok {
		ops = then
	}
	if len(got) != len(ops) {
		return badReply("%d results for %d operations", len(got), len(ops))
	}
	for i, o := range ops {
		g := got[i]
		switch {
		case o.IsGet():
			rr := g.GetResponseRange()
			if rr == nil {
				return badReply("a result of another kind for a read")
			}
			if err := readFits(o, rr.Kvs); err != nil {
				return err
			}
		case o.IsPut():
			if g.GetResponsePut() == nil {
				return badReply("a result of another kind for a put")
			}
		case o.IsDelete():
			if g.GetResponseDeleteRange() == nil {
				return badReply("a result of another kind for a delete")
			}
		case o.IsTxn():
			in := g.GetResponseTxn()
			if in == nil {
				return badReply("a result of another kind for a nested transaction")
			}
			_, t, e := o.Txn()
			if err := resultsFit(in.Succeeded, in.Responses, t, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// readFits checks the key-values kvs read by the Get o: of one key, at
// most one, of that key; of a prefix (a range), only keys within it, at
// most o's limit when it has one.
func readFits(o clientv3.Op, kvs []*mvccpb.KeyValue) error {
	key, end := o.KeyBytes(), o.RangeBytes()
	if len(end) == 0 {
		if len(kvs) > 1 || len(kvs) == 1 && (kvs[0] == nil || !bytes.Equal(kvs[0].Key, key)) {
			return badReply("a read of one key answered with another or more")
		}
		return nil
	}
	if o.Limit() > 0 && int64(len(kvs)) > o.Limit() {
		return badReply("a read answered with more key-values than its limit")
	}
	for _, kv := range kvs {
		if kv == nil || bytes.Compare(kv.Key, key) < 0 || bytes.Compare(kv.Key, end) >= 0 {
			return badReply("a read of a range answered with a key outside it")
		}
	}
	return nil
}

// getFits checks etcd's answer r to the Get o outside a transaction.
func getFits(r *clientv3.GetResponse, o clientv3.Op) error {
	if r == nil || r.Header == nil || r.Header.Revision <= 0 {
		return badReply("a read without its header")
	}
	return readFits(o, r.Kvs)
}

// badReply is the refusal of an etcd answer of another shape than asked.
func badReply(format string, a ...any) error {
	return amp.Named(amp.CodeUnavailable, ErrBadValue, "etcd answered "+format, a...)
}
