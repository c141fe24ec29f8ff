package agent

import (
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// ReplayCache keeps the reply to each (sender, message id) until the
// message expires (RFC 001 §8.4, §16.2). The store's cache is durable and
// group-committed; NewMemoryReplay is not durable.
type ReplayCache interface {
	// Lookup returns the entry of (sender, id) without writing.
	Lookup(sender string, id amp.ID) (resolver.ReplayState, []byte, error)
	// Begin is Lookup that also records a new message as in progress,
	// durably, before a handler runs.
	Begin(sender string, id amp.ID, expires time.Time) (resolver.ReplayState, []byte, error)
	// Complete stores the reply.
	Complete(sender string, id amp.ID, reply []byte, expires time.Time) error
	// Sweep deletes the entries expired at now.
	Sweep(now time.Time) (int, error)
}

type storeReplay struct{ s *resolver.Store }

func (r storeReplay) Lookup(sender string, id amp.ID) (resolver.ReplayState, []byte, error) {
	return r.s.ReplayLookup(sender, id)
}

func (r storeReplay) Begin(sender string, id amp.ID, exp time.Time) (resolver.ReplayState, []byte, error) {
	return r.s.ReplayBegin(sender, id, exp)
}

func (r storeReplay) Complete(sender string, id amp.ID, reply []byte, exp time.Time) error {
	return r.s.ReplayComplete(sender, id, reply, exp)
}

func (r storeReplay) Sweep(now time.Time) (int, error) { return r.s.ReplaySweep(now, 0) }

// MemoryReplay is a ReplayCache in memory: fast, not durable (a restart
// forgets it). Use the store's for production.
type MemoryReplay struct {
	mu sync.Mutex
	m  map[string]memEntry
}

type memEntry struct {
	state   resolver.ReplayState
	reply   []byte
	expires time.Time
}

// NewMemoryReplay returns an empty in-memory replay cache.
func NewMemoryReplay() *MemoryReplay { return &MemoryReplay{m: map[string]memEntry{}} }

func memKey(sender string, id amp.ID) string { return sender + "\x00" + string(id[:]) }

// Lookup implements ReplayCache.
func (r *MemoryReplay) Lookup(sender string, id amp.ID) (resolver.ReplayState, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[memKey(sender, id)]
	if !ok {
		return resolver.ReplayNew, nil, nil
	}
	return e.state, e.reply, nil
}

// Begin implements ReplayCache.
func (r *MemoryReplay) Begin(sender string, id amp.ID, exp time.Time) (resolver.ReplayState, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := memKey(sender, id)
	if e, ok := r.m[k]; ok {
		return e.state, e.reply, nil
	}
	r.m[k] = memEntry{state: resolver.ReplayInProgress, expires: exp}
	return resolver.ReplayNew, nil, nil
}

// Complete implements ReplayCache.
func (r *MemoryReplay) Complete(sender string, id amp.ID, reply []byte, exp time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[memKey(sender, id)] = memEntry{state: resolver.ReplayDone, reply: reply, expires: exp}
	return nil
}

// Sweep implements ReplayCache.
func (r *MemoryReplay) Sweep(now time.Time) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, e := range r.m {
		if e.expires.Before(now) {
			delete(r.m, k)
			n++
		}
	}
	return n, nil
}

// Len returns the number of entries.
func (r *MemoryReplay) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
