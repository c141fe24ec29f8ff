package etcdledger

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// loadedOpTimeout is the OpTimeout of the tests that assert counts, not
// deadlines, on a healthy cluster: far above what a healthy member takes
// to answer on a loaded machine, so that no etcd deadline is hit there.
const loadedOpTimeout = 10 * time.Second

// claimAll claims every key of keys on s, 8 at a time (combined claims
// are refused by a member with a low --max-txn-ops and committed alone).
func claimAll(t *testing.T, s *Store, keys []ledger.Key, exp time.Time) {
	t.Helper()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for try := 0; ; try++ {
				r, err := s.Claim(k, exp)
				if err == nil && !r.Found && r.Wait == nil {
					return
				}
				if try >= 20 {
					t.Errorf("claim %d: %+v %v, want fresh", i, r, err)
					return
				}
				if r.Wait != nil {
					<-r.Wait
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// atOnce calls f(0) … f(n-1) in n goroutines released together, and
// returns their errors and how long they took from the release.
func atOnce(n int, f func(i int) error) ([]error, time.Duration) {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	return errs, time.Since(began)
}

// span is one etcd call as Observe saw it.
type span struct{ from, to time.Time }

// mostAtOnce is the largest number of spans in progress at one moment.
func mostAtOnce(spans []span) int {
	most := 0
	for _, a := range spans {
		n := 0
		for _, b := range spans {
			if !b.from.After(a.from) && b.to.After(a.from) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// A member run with a lower --max-txn-ops than the combined read's size
// (a deployment's choice docs/FLEET.md says works) refuses every combined
// read; its keys must then be read as they were before FLEET-12, each on
// its own and at once (threat: the refused batch's keys read one after
// another in the flight's goroutine, at most 2 batches at a time, so that
// on a healthy cluster the Runnings at the end of a batch of 128 wait for
// the 127 reads ahead of them and are refused "ledger_unavailable ... did
// not answer in time" before their handlers start: 88 of 256 at
// OpTimeout 500 ms on the 2-core test machine, where 256 separate reads
// take about 0.3 s). What shows the fault is how many reads are in
// flight at once, counted from Observe (at most readFlights when they go
// one after another), never how long they take: OpTimeout is
// loadedOpTimeout, so that a healthy cluster on a loaded machine (-race,
// other jobs) answers every read in time, and a refusal is a fault of
// its own (review: at 500 ms, reads in flight together timed out so).
func TestReadsRefusedForSizeNeverQueueOneBehindAnother(t *testing.T) {
	c := etcdtest.StartFlags(t, 3, "--max-txn-ops", "8")
	var mu sync.Mutex
	var spans []span
	var recording bool
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/f12serial/", Now: time.Now, OpTimeout: loadedOpTimeout,
		Observe: func(op string, d time.Duration, _ error) {
			mu.Lock()
			if recording && op == "mark" {
				now := time.Now()
				spans = append(spans, span{now.Add(-d), now})
			}
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Minute)
	keys := make([]ledger.Key, 256)
	for i := range keys {
		keys[i] = ledger.Key{Sender: fmt.Sprintf("did:example:q%d", i), ID: [16]byte{byte(i), 0xf1}}
	}
	claimAll(t, s, keys, exp)
	mu.Lock()
	recording = true
	mu.Unlock()
	errs, took := atOnce(len(keys), func(i int) error { return s.MarkRunning(keys[i], exp) })
	refused := 0
	var first error
	for _, err := range errs {
		if err != nil {
			if refused++; first == nil {
				first = err
			}
		}
	}
	mu.Lock()
	most := mostAtOnce(spans)
	mu.Unlock()
	if refused > 0 || most <= readFlights {
		t.Fatalf("%d of %d Runnings refused on a healthy cluster (first: %v); at most %d claim reads in flight at once, %v for all: "+
			"the reads of a batch refused for its size went one after another", refused, len(keys), first, most, took)
	}
	t.Logf("%d Runnings confirmed in %v, up to %d reads at once", len(keys), took, most)
}

// A read whose own time is spent (it waited in the queue behind reads
// that took most of their OpTimeout: a slow member) must not cut short
// the reads combined with it (threat: the combined read is sent with the
// earliest deadline of its batch, so one read with nothing left refuses
// every Running of the batch, up to 128 messages, though each alone would
// have been confirmed; on a cluster whose reads take 0.75 OpTimeout every
// other batch is refused so).
func TestCombinedReadNeverCutShortByAnotherReadsDeadline(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/f12dl/", Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Minute)
	keys := []ledger.Key{{Sender: "did:example:old", ID: [16]byte{1}}, {Sender: "did:example:fresh", ID: [16]byte{2}}}
	claimAll(t, s, keys, exp)
	s.mu.Lock()
	rev := s.claims[keys[1]].rev
	s.mu.Unlock()
	req := func(k ledger.Key, dl time.Time) *readReq {
		return &readReq{op: "mark", key: keysOf(s.prefix, k).claim, dl: dl, done: make(chan struct{})}
	}
	old := req(keys[0], time.Now().Add(-time.Millisecond)) // its OpTimeout spent in the queue
	fresh := req(keys[1], time.Now().Add(s.o.OpTimeout))
	s.reads.read([]*readReq{old, fresh})
	if fresh.err != nil || fresh.kv == nil || fresh.kv.CreateRevision != rev {
		t.Fatalf("fresh read combined with one out of time: %v (claim %v), want its claim at revision %d", fresh.err, fresh.kv, rev)
	}
}

// A combined write must not be cut short by the deadline of one of its
// transactions whose time is spent (threat: commit sends the combined
// transaction with the earliest deadline of its batch, so a Claim or
// Finish combined with one that waited out its OpTimeout in the queue is
// answered "did not answer in time" with the others, every message of
// the batch refused, a Finish's reply left unrecorded and its retries
// answered "outcome unknown", though each alone would have committed; a
// transaction alone after a failed comparison already gets a fresh
// OpTimeout, so waiting for the batch's latest deadline outlives none
// that the store does not already outlive).
func TestCombinedWriteNeverCutShortByAnotherWritesDeadline(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/f12wdl/", Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	old := shapedTxn(s.prefix, ledger.Key{Sender: "did:example:old", ID: [16]byte{1}}, false)
	old.dl = time.Now().Add(-time.Millisecond) // its OpTimeout spent in the queue
	fresh := shapedTxn(s.prefix, ledger.Key{Sender: "did:example:fresh", ID: [16]byte{2}}, true)
	s.combine.commit([]*txnReq{old, fresh})
	if fresh.alone || fresh.err != nil || fresh.r == nil || !fresh.r.Succeeded {
		t.Fatalf("fresh Claim combined with a write out of time: alone %v, %v; want committed", fresh.alone, fresh.err)
	}
}

// A member run with a lower --max-request-bytes refuses a combined
// transaction of large replies as too large: each Finish is then
// committed alone and recorded (threat: "request is too large" taken for
// an unavailable cluster, every Finish of the batch refused and its reply
// sent unrecorded, a retry answered "outcome unknown").
func TestFinishesRefusedTooLargeCombinedAreEachRecorded(t *testing.T) {
	c := etcdtest.StartFlags(t, 3, "--max-request-bytes", "65536")
	var tooLarge atomic.Int64
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/f12big/", Now: time.Now, Limits: ledger.Limits{ReplyReserve: 20000},
		Observe: func(op string, _ time.Duration, err error) {
			if op == "finish" && err != nil && rpctypes.Error(errorsCause(err)) == rpctypes.ErrRequestTooLarge {
				tooLarge.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Minute)
	keys := make([]ledger.Key, 16)
	for i := range keys {
		keys[i] = ledger.Key{Sender: fmt.Sprintf("did:example:b%d", i), ID: [16]byte{byte(i), 0xb1}}
	}
	claimAll(t, s, keys, exp)
	for _, k := range keys {
		if err := s.MarkRunningWithin(k, exp, 20000); err != nil {
			t.Fatal(err)
		}
	}
	errs, _ := atOnce(len(keys), func(i int) error { return s.Finish(keys[i], bytes.Repeat([]byte{byte('a' + i)}, 15000)) })
	for i, k := range keys {
		if errs[i] != nil {
			t.Fatalf("finish %d: %v, want recorded", i, errs[i])
		}
		r, found, err := s.Lookup(k)
		if err != nil || !found || !bytes.Equal(r.Reply, bytes.Repeat([]byte{byte('a' + i)}, 15000)) {
			t.Fatalf("key %d after its Finish: found %v, %d bytes, %v; want its reply", i, found, len(r.Reply), err)
		}
	}
	t.Logf("%d combined Finishes refused as too large, each then recorded alone", tooLarge.Load())
}
