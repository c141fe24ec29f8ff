package etcdledger

import (
	"testing"
	"time"
)

// Threat (clock step, FLEET-27 amended): a bucket's lease was granted
// with the wall clock right, the clock then stepped forward, and the
// bucket's first charge came after the step (its first write was
// contended and retried under the cached lease). The charge kept the
// bucket in the tally as long as a lease granted *now* would last, the
// step shorter than the lease the entry was written under: the tally
// dropped the bucket while etcd still held its entries, and the node's
// Budget undercounted them. The tally now keeps a bucket at least as long
// as its cached lease lasts. No etcd is needed: the tally and the lease
// cache are the node's own.
func TestTallyChargedAfterAClockStepKeepsTheBucketForItsLease(t *testing.T) {
	var wallAhead time.Duration
	s := &Store{tally: map[int64]tallyBucket{}}
	s.o.Now = func() time.Time { return time.Now().Add(wallAhead) }
	end := time.Now().Unix() + 3
	// The lease granted with the wall clock right: it lasts until the
	// bucket's end plus a second, by the monotonic clock.
	s.leases.until = map[int64]time.Time{end: time.Now().Add(time.Duration(leaseTTL(end, time.Now(), 0)) * time.Second)}
	wallAhead = 2 * time.Second // the clock steps forward
	s.charge(end, 100, 1)
	time.Sleep(2500 * time.Millisecond)
	s.pruneTally(s.o.Now().Add(time.Hour)) // the wall clock reads far past the bucket
	if s.usage.Bytes != 100 || s.usage.Entries != 1 {
		t.Fatalf("usage %+v after the step: the bucket left the tally before its lease ended", s.usage)
	}
	time.Sleep(2 * time.Second) // the lease's own time has run
	s.pruneTally(s.o.Now().Add(time.Hour))
	if s.usage.Bytes != 0 || s.usage.Entries != 0 {
		t.Fatalf("usage %+v once the lease ended: the bucket stayed", s.usage)
	}
}
