package etcdledger_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// counterSum is the sum of every usage counter under prefix.
func counterSum(t *testing.T, c *etcdtest.Cluster, prefix string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Client().Get(ctx, prefix+"u/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, kv := range r.Kvs {
		n, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil {
			t.Fatalf("counter %s: %v", kv.Key, err)
		}
		sum += n
	}
	return sum
}

// runKeys claims, marks running and finishes every key of keys on s, all
// at once when concurrent, else one after the other.
func runKeys(t *testing.T, s *etcdledger.Store, keys []ledger.Key, exp time.Time, concurrent bool) {
	t.Helper()
	var wg sync.WaitGroup
	one := func(k ledger.Key) {
		defer wg.Done()
		c, err := s.Claim(k, exp)
		if err != nil || c.Found || c.Wait != nil {
			t.Errorf("claim %x: %+v %v, want fresh", k.ID, c, err)
			return
		}
		if err := s.MarkRunning(k, exp); err != nil {
			t.Errorf("mark %x: %v", k.ID, err)
			return
		}
		if err := s.Finish(k, []byte("reply "+k.Sender)); err != nil {
			t.Errorf("finish %x: %v", k.ID, err)
		}
	}
	for _, k := range keys {
		wg.Add(1)
		if concurrent {
			go one(k)
		} else {
			one(k)
		}
	}
	wg.Wait()
}

// Transactions combined into one etcd transaction (FLEET-10) must act as
// if each had been committed alone: a key another copy already finished,
// and copies of one key claimed at once on 8 nodes (one of them this
// node, its claim among the 40 keys' transactions), must not let a second claim win
// nor make the fresh keys of the same batch fail, and the usage counters
// of senders with several messages in flight must add up exactly as when
// the messages go one after the other (a lost counter update would let a
// sender past its fleet-wide share).
func TestCombinedTransactionsNeverDoubleClaimNorLoseCounters(t *testing.T) {
	c := etcdtest.Start(t, 3)
	exp := time.Now().Add(time.Minute)
	var keys []ledger.Key
	for i := 0; i < 40; i++ {
		keys = append(keys, ledger.Key{Sender: fmt.Sprintf("did:example:s%d", i%4), ID: [16]byte{byte(i + 1)}})
	}
	seq := openStore(t, c, "/combine-seq/", ledger.Limits{})
	runKeys(t, seq, keys, exp, false)

	s := openStore(t, c, "/combine/", ledger.Limits{})
	done := ledger.Key{Sender: "did:example:done", ID: [16]byte{0xdd}}
	runKeys(t, s, []ledger.Key{done}, exp, false)
	before := s.Stats().Calls

	same := ledger.Key{Sender: "did:example:same", ID: [16]byte{0x55}}
	var mu sync.Mutex
	claimed, waiting := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		claimer := s // one copy here, in the batches of the 40 keys
		if i > 0 {
			claimer = openStore(t, c, "/combine/", ledger.Limits{}) // the others on other nodes
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := claimer.Claim(same, exp)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("claim of one key: %v", err)
			case r.Wait != nil:
				waiting++
			case !r.Found:
				claimed++
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := s.Claim(done, exp)
		if err != nil || !r.Found || string(r.Record.Reply) != "reply did:example:done" {
			t.Errorf("claim of a finished key: %+v %v, want its reply", r, err)
		}
	}()
	runKeys(t, s, keys, exp, true)
	wg.Wait()
	if claimed != 1 || waiting != 7 {
		t.Fatalf("8 claims of one key at once: %d claimed, %d told to wait; want 1 and 7", claimed, waiting)
	}
	if got, want := counterSum(t, c, "/combine/")-counterSum(t, c, "/combine-seq/"), sumOne(t, c)+sumClaimed(t, c, same); got != want {
		t.Fatalf("usage counters combined minus one after another = %d, want %d (the finished key's and the claimed key's: nothing lost, nothing twice)", got, want)
	}
	if calls := s.Stats().Calls - before; calls >= 3*40 {
		t.Fatalf("%d etcd calls for 40 concurrent messages: none was combined", calls)
	}
}

// sumOne is what one finished message of "did:example:done" adds to the
// counters: measured on its own prefix.
func sumOne(t *testing.T, c *etcdtest.Cluster) int64 {
	t.Helper()
	s := openStore(t, c, "/combine-one/", ledger.Limits{})
	runKeys(t, s, []ledger.Key{{Sender: "did:example:done", ID: [16]byte{0xdd}}}, time.Now().Add(time.Minute), false)
	return counterSum(t, c, "/combine-one/")
}

// sumClaimed is what the claim of k adds to the counters (its running
// entry is charged at the claim, FLEET-11): measured on its own prefix.
func sumClaimed(t *testing.T, c *etcdtest.Cluster, k ledger.Key) int64 {
	t.Helper()
	s := openStore(t, c, "/combine-claimed/", ledger.Limits{})
	if r, err := s.Claim(k, time.Now().Add(time.Minute)); err != nil || r.Found || r.Wait != nil {
		t.Fatalf("claim: %+v %v", r, err)
	}
	return counterSum(t, c, "/combine-claimed/")
}

// A member run with a lower --max-txn-ops than etcd's default (a
// deployment's choice) refuses the larger combined transactions: each
// of their messages is then committed alone (threat: every combined
// transaction refused whole, and with it every message in it, for as
// long as the setting holds).
func TestLowMaxTxnOpsMemberStillCommitsEveryMessage(t *testing.T) {
	c := etcdtest.StartFlags(t, 3, "--max-txn-ops", "8")
	s := openStore(t, c, "/lowops/", ledger.Limits{})
	exp := time.Now().Add(time.Minute)
	var keys []ledger.Key
	for i := 0; i < 24; i++ {
		keys = append(keys, ledger.Key{Sender: fmt.Sprintf("did:example:l%d", i), ID: [16]byte{byte(i + 1)}})
	}
	runKeys(t, s, keys, exp, true)
	for _, k := range keys {
		r, err := s.Claim(k, exp)
		if err != nil || !r.Found || string(r.Record.Reply) != "reply "+k.Sender {
			t.Fatalf("key %x after its run: %+v %v, want its reply", k.ID, r, err)
		}
	}
}

// Claims confirmed at once before their handlers start (FLEET-11) are
// read together, and each is judged on its own key (threat: one read for
// many hides a claim etcd no longer holds, or one claim gone makes the
// others of the read fail).
func TestCombinedClaimReadsRefuseOnlyTheLostClaim(t *testing.T) {
	c := etcdtest.Start(t, 3)
	var reads atomic.Int64
	s, err := etcdledger.Open(etcdledger.Options{Endpoints: c.Endpoints(), Prefix: "/reads/", Now: time.Now,
		Observe: func(op string, _ time.Duration, _ error) {
			if op == "mark" {
				reads.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Minute)
	var keys []ledger.Key
	for i := 0; i < 24; i++ {
		k := ledger.Key{Sender: fmt.Sprintf("did:example:r%d", i), ID: [16]byte{byte(i + 1)}}
		if r, err := s.Claim(k, exp); err != nil || r.Found || r.Wait != nil {
			t.Fatalf("claim %d: %+v %v", i, r, err)
		}
		keys = append(keys, k)
	}
	lost := keys[7]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := c.Client().Delete(ctx, "/reads/c/"+hash16Test(lost.Sender)+"/"+hexID(lost.ID)); err != nil || r.Deleted != 1 {
		t.Fatalf("delete the claim: %v %v", r, err)
	}
	errs := make([]error, len(keys))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.MarkRunning(k, exp)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if keys[i] == lost && amp.NameOf(err) != etcdledger.ErrClaimLost {
			t.Fatalf("Running of the message whose claim is gone: %v, want %s", err, etcdledger.ErrClaimLost)
		}
		if keys[i] != lost && err != nil {
			t.Fatalf("Running %d, its claim held: %v", i, err)
		}
	}
	if n := reads.Load(); n >= int64(len(keys)) {
		t.Fatalf("%d etcd reads to confirm %d claims at once: none was combined", n, len(keys))
	}
}
