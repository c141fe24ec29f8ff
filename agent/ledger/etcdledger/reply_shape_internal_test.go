package etcdledger

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/amp"
)

// Attack: a misbehaving member or proxy answers a transaction, or a read,
// with results of another shape than asked (FLEET-28). Each crafted
// answer below is refused by name (ledger_value_corrupt), none is used;
// the answer of the shape asked passes. No etcd: replyFits and getFits
// on crafted values.
func TestEtcdAnswerShapeMismatchesAreRefusedByName(t *testing.T) {
	const u = "/p/u/0123/"
	then := []clientv3.Op{
		clientv3.OpPut("/p/c/k", "n.1"),
		clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpGet(u, clientv3.WithPrefix(), clientv3.WithLimit(2))}, []clientv3.Op{clientv3.OpGet("/p/e/k")}),
		clientv3.OpDelete("/p/c/x"),
	}
	els := []clientv3.Op{clientv3.OpGet("/p/e/k"), clientv3.OpGet("/p/c/k")}
	hdr := &pb.ResponseHeader{Revision: 7}
	kv := func(k string) *mvccpb.KeyValue { return &mvccpb.KeyValue{Key: []byte(k), Value: []byte("1")} }
	rng := func(kvs ...*mvccpb.KeyValue) *pb.ResponseOp {
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: kvs}}}
	}
	put := &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: &pb.PutResponse{}}}
	del := &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: &pb.DeleteRangeResponse{}}}
	nested := func(ok bool, rs ...*pb.ResponseOp) *pb.ResponseOp {
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: &pb.TxnResponse{Succeeded: ok, Responses: rs}}}
	}
	txn := func(h *pb.ResponseHeader, ok bool, rs ...*pb.ResponseOp) *clientv3.TxnResponse {
		return &clientv3.TxnResponse{Header: h, Succeeded: ok, Responses: rs}
	}
	good := []*clientv3.TxnResponse{
		txn(hdr, true, put, nested(true, rng(kv(u+"1"), kv(u+"2"))), del),
		txn(hdr, true, put, nested(false, rng()), del),
		txn(hdr, false, rng(kv("/p/e/k")), rng()),
	}
	for i, r := range good {
		if err := replyFits(r, then, els); err != nil {
			t.Errorf("answer %d of the shape asked refused: %v", i, err)
		}
	}
	bad := map[string]*clientv3.TxnResponse{
		"Nil":                 nil,
		"NoHeader":            txn(nil, true, put, nested(true, rng()), del),
		"RevisionZero":        txn(&pb.ResponseHeader{}, true, put, nested(true, rng()), del),
		"ThenCutShort":        txn(hdr, true, put),
		"ThenOneMore":         txn(hdr, true, put, nested(true, rng()), del, del),
		"ElseCutShort":        txn(hdr, false, rng()),
		"ElseOfThenShape":     txn(hdr, false, put, nested(true, rng()), del),
		"PutAnsweredAsRead":   txn(hdr, true, rng(), nested(true, rng()), del),
		"ReadAnsweredAsPut":   txn(hdr, false, put, rng()),
		"DeleteAnsweredAsPut": txn(hdr, true, put, nested(true, rng()), put),
		"NestedAnsweredAsPut": txn(hdr, true, put, put, del),
		"NestedCutShort":      txn(hdr, true, put, nested(true), del),
		"ReadOfAnotherKey":    txn(hdr, false, rng(kv("/p/e/other")), rng()),
		"ReadOfTwoKeyValues":  txn(hdr, false, rng(kv("/p/e/k"), kv("/p/e/k")), rng()),
		"ReadOfANilKeyValue":  txn(hdr, false, rng(nil), rng()),
		"RangeOutsidePrefix":  txn(hdr, true, put, nested(true, rng(kv("/p/u/0124/1"))), del),
		"RangeOverItsLimit":   txn(hdr, true, put, nested(true, rng(kv(u+"1"), kv(u+"2"), kv(u+"3"))), del),
	}
	for name, r := range bad {
		if err := replyFits(r, then, els); amp.NameOf(err) != ErrBadValue {
			t.Errorf("%s: %v, want %s", name, err, ErrBadValue)
		}
	}
	get := clientv3.OpGet("/p/e/k")
	for name, r := range map[string]*clientv3.GetResponse{
		"NoHeader":     {Kvs: []*mvccpb.KeyValue{kv("/p/e/k")}},
		"AnotherKey":   {Header: hdr, Kvs: []*mvccpb.KeyValue{kv("/p/e/j")}},
		"TwoKeyValues": {Header: hdr, Kvs: []*mvccpb.KeyValue{kv("/p/e/k"), kv("/p/e/k")}},
	} {
		if err := getFits(r, get); amp.NameOf(err) != ErrBadValue {
			t.Errorf("read %s: %v, want %s", name, err, ErrBadValue)
		}
	}
	if err := getFits(&clientv3.GetResponse{Header: hdr}, get); err != nil {
		t.Errorf("a read of an absent key refused: %v", err)
	}
	if _, err := grantedID(&clientv3.LeaseGrantResponse{ID: clientv3.NoLease}); amp.NameOf(err) != ErrBadValue {
		t.Errorf("a grant of lease 0: %v, want %s", err, ErrBadValue)
	}
}

// A principal's counters read with their limit left out (More) are
// refused, never summed from the part read (FLEET-29).
func TestUsageCountersCutByTheirLimitAreRefused(t *testing.T) {
	r := &pb.RangeResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte("/p/u/h/1"), Value: []byte("10"), Lease: 7}}, More: true}
	if _, _, err := snapOf(r, 3, 0); amp.NameOf(err) != ErrCounterCorrupt {
		t.Fatalf("%v, want %s", err, ErrCounterCorrupt)
	}
	r.More = false
	if sn, _, err := snapOf(r, 3, 0); err != nil || sn.sum != 10 {
		t.Fatalf("%v %v", sn, err)
	}
	// A counter without a lease is no node's (FLEET-33).
	r.Kvs[0].Lease = 0
	if _, _, err := snapOf(r, 3, 0); amp.NameOf(err) != ErrCounterCorrupt {
		t.Fatalf("a counter without a lease: %v, want %s", err, ErrCounterCorrupt)
	}
}
