package etcdledger

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
)

// maxCleanups bounds the cleanups waiting for etcd; one more is dropped
// (its claim then goes with the session lease, when the process ends).
const maxCleanups = 1 << 16

// cleanup is a claim this process gave up, to delete from etcd: the claim
// key of k created at revision rev (never a later claim of k), and with
// entry, the running entry of k created under that claim by a Running
// whose answer was lost (the handler never started: FLEET-7).
type cleanup struct {
	k     ledger.Key
	rev   int64
	entry bool
}

// cleaner retries the cleanups that failed, for as long as the process
// lives: one goroutine, one queue, all of it tried again after a backoff
// (OpTimeout, doubling, at most SessionTTL) when etcd fails, at once
// when a cleanup is added.
type cleaner struct {
	s    *Store
	mu   sync.Mutex
	q    map[cleanup]struct{}
	wake chan struct{}
	once sync.Once
}

// add queues c, starting the goroutine on first use.
func (cl *cleaner) add(c cleanup) {
	cl.mu.Lock()
	if len(cl.q) < maxCleanups {
		cl.q[c] = struct{}{}
	}
	cl.mu.Unlock()
	cl.once.Do(func() { go cl.run() })
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

// pending is the number of cleanups waiting.
func (cl *cleaner) pending() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.q)
}

// run retries the queue until the store closes.
func (cl *cleaner) run() {
	fails := 0
	for {
		var wait <-chan time.Time
		if fails > 0 {
			d := cl.s.o.OpTimeout << min(fails-1, 16)
			wait = time.After(min(d, cl.s.o.SessionTTL))
		}
		select {
		case <-cl.s.bg.Done():
			return
		case <-wait:
		case <-cl.wake:
			if fails > 0 { // etcd failed lately: keep to the backoff
				select {
				case <-cl.s.bg.Done():
					return
				case <-wait:
				}
			}
		}
		if cl.round() {
			fails = 0
		} else {
			fails++
		}
	}
}

// round tries the queued cleanups, one by one, until one fails (etcd is
// likely down: the rest wait for the next round); it reports whether all
// succeeded.
func (cl *cleaner) round() bool {
	cl.mu.Lock()
	batch := make([]cleanup, 0, len(cl.q))
	for c := range cl.q {
		batch = append(batch, c)
	}
	cl.mu.Unlock()
	for _, c := range batch {
		if cl.s.bg.Err() != nil || cl.s.clean(c) != nil {
			return false
		}
		cl.mu.Lock()
		delete(cl.q, c)
		cl.mu.Unlock()
	}
	return true
}

// clean deletes c's claim, if it is still the one created at c.rev, in
// one transaction; with c.entry, also k's entry if it was created after
// that claim and never finished (version 1: running). Its usage charge is
// left to expire with its bucket.
func (s *Store) clean(c cleanup) error {
	ks := keysOf(s.prefix, c.k)
	ops := []clientv3.Op{clientv3.OpDelete(ks.claim)}
	if c.entry {
		ops = append([]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(ks.entry), ">", c.rev),
			clientv3.Compare(clientv3.Version(ks.entry), "=", 1),
		}, []clientv3.Op{clientv3.OpDelete(ks.entry)}, nil)}, ops...)
	}
	return s.call("unclaim", func(ctx context.Context) error {
		_, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", c.rev)).
			Then(ops...).Commit()
		return err
	})
}
