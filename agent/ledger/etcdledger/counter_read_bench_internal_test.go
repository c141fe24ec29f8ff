package etcdledger

import (
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// fullCounterRead is a read of one principal's usage counters as large as
// a node accepts (maxCountersOf), every other one of a bucket over at
// now (FLEET-37), each under a lease.
func fullCounterRead(now time.Time) *pb.RangeResponse {
	n := maxCountersOf(0)
	r := &pb.RangeResponse{}
	for i := range n {
		end := now.Unix() + 3600 + int64(i)
		if i%2 == 0 {
			end = now.Unix() - 3600 - int64(i)
		}
		r.Kvs = append(r.Kvs, &mvccpb.KeyValue{Key: []byte(usageKey("/bench/", "0123456789abcdef0123456789abcdef", end)),
			Value: []byte("1"), Lease: 7, ModRevision: 5, CreateRevision: 4})
	}
	return r
}

// BenchmarkCounterReadOfAFullPrincipal is what a node does with every
// read of a principal's counters (Store.snapOf: the share read, the
// Claim's read-back, the read after each transaction) at the largest
// read it accepts: sum the counters within their life, and queue the
// delete of those of a bucket over (FLEET-37, FLEET-41).
func BenchmarkCounterReadOfAFullPrincipal(b *testing.B) {
	now := time.Now()
	s := &Store{o: Options{Now: func() time.Time { return now }}}
	s.cleaner = cleaner{s: s, q: map[cleanup]struct{}{}, wake: make(chan struct{}, 1)}
	s.cleaner.once.Do(func() {}) // no goroutine: nothing deleted
	r := fullCounterRead(now)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.snapOf(r, 6); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAFullCounterReadLooksAtEachCounterOnce
//
// Attack: a principal's usage counters number up to maxCountersOf (8,192
// and two per second of skew) before a read of them is refused
// (FLEET-29), and a sender makes more by sending messages of other
// expiries (one counter per bucket). Every node reads them all at each
// transaction of that principal (the share read, the Claim's read-back,
// the read after each write: Store.snapOf), and each counter's key was
// made a string three times (vals, mods, creates) and its bucket end
// parsed twice (snapOf, then cleaner.strays), the three maps grown by
// doubling: about 3 allocations and 740 bytes per counter per read.
//
// Defence (docs/SPEC-DECISIONS.md FLEET-41): one pass looks at each
// counter once: its key made a string once, its end parsed once, for
// the sum and the deletes alike (snapOf returns the deletes it found),
// the maps sized for the read. Bound: at most 1.25 allocations per
// counter of a full read (before: 3.03), counted, never timed; the
// deletes queued are the counters left out of the sum, as before.
func TestAFullCounterReadLooksAtEachCounterOnce(t *testing.T) {
	now := time.Now()
	s := &Store{o: Options{Now: func() time.Time { return now }}}
	s.cleaner = cleaner{s: s, q: map[cleanup]struct{}{}, wake: make(chan struct{}, 1)}
	s.cleaner.once.Do(func() {}) // no goroutine: the queue is looked at, not run
	r := fullCounterRead(now)
	n := len(r.Kvs)
	snap, err := s.snapOf(r, 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.vals) != n/2 || len(snap.mods) != n || snap.sum != int64(n/2) {
		t.Fatalf("a read of %d counters, half of a bucket over: %d summed to %d, %d revisions kept; want %d, %d, %d",
			n, len(snap.vals), snap.sum, len(snap.mods), n/2, n/2, n)
	}
	queued := 0
	for c := range s.cleaner.q {
		if _, summed := snap.vals[c.counter]; summed || !c.stray || c.lease != 7 {
			t.Fatalf("queued %+v: summed %v", c, summed)
		}
		queued++
	}
	if want := min(n/2, maxCleanups/2); queued != want {
		t.Fatalf("%d deletes queued, want %d", queued, want)
	}
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	per := testing.AllocsPerRun(5, func() {
		if _, err := s.snapOf(r, 6); err != nil {
			t.Fatal(err)
		}
	}) / float64(n)
	t.Logf("a read of %d counters: %.2f allocations per counter", n, per)
	if per > 1.25 {
		t.Fatalf("a read of %d counters makes %.2f allocations per counter; want at most 1.25: a counter's key is made a string, or its end parsed, more than once", n, per)
	}
}
