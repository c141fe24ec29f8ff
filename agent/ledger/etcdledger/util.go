package etcdledger

import (
	"encoding/hex"
	"errors"
	"strconv"

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
