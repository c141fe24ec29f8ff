package etcdledger

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// session is this process's lease for its claims, kept alive while the
// process runs; when it expires (etcd did not hear from the process in
// SessionTTL) its claims are gone and a new one is granted.
type session struct {
	s      *Store
	mu     sync.Mutex
	id     clientv3.LeaseID
	cancel context.CancelFunc
}

// lease returns the live session lease, granting one if there is none.
func (se *session) lease() (clientv3.LeaseID, error) {
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.id != 0 {
		return se.id, nil
	}
	var id clientv3.LeaseID
	err := se.s.call("lease", func(ctx context.Context) error {
		r, err := se.s.cli.Grant(ctx, int64(se.s.o.SessionTTL/time.Second))
		if err == nil {
			id = r.ID
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(se.s.bg)
	ch, err := se.s.cli.KeepAlive(ctx, id)
	if err != nil {
		cancel()
		return 0, err
	}
	se.id, se.cancel = id, cancel
	go func() {
		for range ch { // the keep-alive answers: drained
		}
		se.mu.Lock()
		if se.id == id {
			se.id = 0 // expired or closed: the next claim grants a new one
		}
		se.mu.Unlock()
		cancel()
	}()
	return id, nil
}

// revoke ends the session: its claims are deleted at once.
func (se *session) revoke() {
	se.mu.Lock()
	id, cancel := se.id, se.cancel
	se.id = 0
	se.mu.Unlock()
	if id == 0 {
		return
	}
	cancel()
	_ = se.s.call("lease", func(ctx context.Context) error {
		_, err := se.s.cli.Revoke(ctx, id)
		return err
	})
}

// leaseCache holds one lease per expiry bucket end (unix seconds): every
// entry of the bucket, and its usage counters, are attached to it, so
// that etcd deletes them together at the bucket's end.
type leaseCache struct {
	s  *Store
	mu sync.Mutex
	m  map[int64]clientv3.LeaseID
}

// get returns the lease ending at end, granted if needed.
func (lc *leaseCache) get(end int64) (clientv3.LeaseID, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if id, ok := lc.m[end]; ok {
		return id, nil
	}
	ttl := end - lc.s.o.Now().Unix() + 1
	if ttl < 1 {
		ttl = 1
	}
	var id clientv3.LeaseID
	err := lc.s.call("lease", func(ctx context.Context) error {
		r, err := lc.s.cli.Grant(ctx, ttl)
		if err == nil {
			id = r.ID
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	lc.m[end] = id
	return id, nil
}

// drop forgets the lease of end (etcd no longer has it).
func (lc *leaseCache) drop(end int64) {
	lc.mu.Lock()
	delete(lc.m, end)
	lc.mu.Unlock()
}

// prune forgets the leases ended at now.
func (lc *leaseCache) prune(now time.Time) {
	lc.mu.Lock()
	for end := range lc.m {
		if end < now.Unix() {
			delete(lc.m, end)
		}
	}
	lc.mu.Unlock()
}
