package etcdledger

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: a hostile or broken etcd member, or a proxy in front of it,
// answers a read with a message far larger than anything the ledger
// asks for; the gRPC client's default receive limit (2 GiB) buffered it
// whole (FLEET-30). Against a real etcd, with the store's receive limit
// set low for the test (64 KiB): an entry whose value is 256 KiB is
// refused by name (ledger_answer_too_large), never decoded nor
// answered; an entry within the limit is still read.
func TestEtcdAnswerOverTheReceiveLimitIsRefusedUnread(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const prefix = "/big/"
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: prefix, Now: time.Now, recvLimit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(k ledger.Key, reply int) {
		e := entry{state: stateDone, expires: time.Now().Add(time.Hour), reserve: int64(reply), reply: make([]byte, reply)}
		e.end = bucketEnd(time.Now(), e.expires)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Client().Put(ctx, keysOf(prefix, k).entry, string(e.encode())); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		reply int
		want  amp.ErrName // "": read
	}{
		{"within the limit", 8 << 10, ""},
		{"four times the limit", 256 << 10, ErrAnswerTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := ledger.Key{Sender: "did:key:z6MkHostile" + tc.name}
			put(k, tc.reply)
			rec, found, err := s.Lookup(k)
			if got := amp.NameOf(err); got != tc.want {
				t.Fatalf("error %v (%q), want %q", err, got, tc.want)
			}
			if tc.want == "" && (!found || len(rec.Reply) != tc.reply) {
				t.Fatalf("found %v, %d bytes of %d", found, len(rec.Reply), tc.reply)
			}
			if tc.want != "" && (found || rec.Reply != nil) {
				t.Fatalf("refused answer used: found %v, %d bytes", found, len(rec.Reply))
			}
		})
	}
}

// Threat: a receive limit below an honest answer turns applied
// transactions into lost answers (FLEET-29's objection). The largest
// answer the store can be sent honestly, a combined transaction of
// combineMaxMembers messages each reading two whole entries of MaxReply
// and its principal's counters up to their limit, every number at its
// widest encoding, fits within recvLimit, for the longest prefix and a
// skew of an hour; and the default bound stays far below gRPC's 2 GiB.
func TestLargestHonestEtcdAnswerFitsTheReceiveLimit(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		skew   time.Duration
	}{
		{DefaultPrefix, amp.DefaultMaxClockSkew},
		{"/" + strings.Repeat("p", maxPrefix-2) + "/", time.Hour},
	} {
		n := maxCountersOf(tc.skew)
		limit := recvLimit(tc.prefix, n)
		if got := proto.Size(largestHonestAnswer(tc.prefix, n)); got > limit {
			t.Errorf("prefix of %d, skew %v: an honest answer of %d bytes over the limit %d", len(tc.prefix), tc.skew, got, limit)
		}
	}
	if l := recvLimit(DefaultPrefix, maxCountersOf(amp.DefaultMaxClockSkew)); l > 128<<20 || l >= math.MaxInt32/16 {
		t.Fatalf("default receive limit %d bytes: not far below gRPC's default", l)
	}
}

// largestHonestAnswer builds a combined transaction's answer at every
// bound the store keeps (docs/SPEC-DECISIONS.md FLEET-10, FLEET-29).
func largestHonestAnswer(prefix string, counters int) *pb.TxnResponse {
	const big = math.MaxInt64
	kv := func(k string, v int) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k), Value: make([]byte, v), CreateRevision: big, ModRevision: big, Version: big, Lease: big}
	}
	rng := func(kvs ...*mvccpb.KeyValue) *pb.ResponseOp {
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: kvs, More: true, Count: big}}}
	}
	k := keysOf(prefix, ledger.Key{Sender: "did:key:z6MkLargest"})
	hdr := &pb.ResponseHeader{ClusterId: math.MaxUint64, MemberId: math.MaxUint64, Revision: big, RaftTerm: math.MaxUint64}
	out := &pb.TxnResponse{Header: hdr, Succeeded: true}
	for m := 0; m < combineMaxMembers; m++ {
		cs := make([]*mvccpb.KeyValue, counters)
		for i := range cs {
			cs[i] = kv(usageKey(prefix, strings.Repeat("f", 32), big), len("281474976710656"))
		}
		in := &pb.TxnResponse{Header: hdr, Succeeded: true, Responses: []*pb.ResponseOp{
			rng(kv(k.entry, entryHeader+MaxReply)), rng(kv(k.entry, entryHeader+MaxReply)),
			rng(kv(k.claim, 64)), rng(cs...)}}
		for len(in.Responses) < combineMaxOps/combineMaxMembers {
			in.Responses = append(in.Responses, &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: &pb.PutResponse{Header: hdr}}})
		}
		out.Responses = append(out.Responses, &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: in}})
	}
	return out
}
