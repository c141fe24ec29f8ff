package resolver

import (
	"bytes"
	"encoding/binary"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// The replay/idempotency cache (RFC 001 §8.4, §16.2): the reply to each
// (sender, message id), kept until the message expires, so that a
// duplicate gets the byte-identical reply and a handler never runs twice.
// Writes go through a group committer: concurrent writers share one bbolt
// commit (one fsync), and a lone writer waits for nothing but its own.

// ReplayState is the state of a replay entry.
type ReplayState uint8

const (
	// ReplayNew: the message was not seen; an in-progress marker now
	// records it.
	ReplayNew ReplayState = iota
	// ReplayInProgress: a marker without a reply: this process or an
	// earlier one (which then crashed) began processing the message.
	ReplayInProgress
	// ReplayDone: the reply is stored.
	ReplayDone
)

type replayRecord struct {
	State   uint8  `cbor:"state"`
	Expires int64  `cbor:"expires"` // Unix milliseconds
	Reply   []byte `cbor:"reply,omitempty"`
}

// replayKey is sender DID \x00 message id.
func replayKey(sender string, id [16]byte) []byte {
	k := make([]byte, 0, len(sender)+17)
	k = append(k, sender...)
	k = append(k, 0)
	return append(k, id[:]...)
}

// expKey orders the expiry index: expiry (big-endian ms) then the entry key.
func expKey(expires int64, key []byte) []byte {
	k := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(k, uint64(expires))
	return append(k, key...)
}

// ReplayBegin looks up (sender, id). When the message is new it durably
// records an in-progress marker that expires at expires, and returns
// ReplayNew; otherwise it returns the entry's state and, for ReplayDone,
// the stored reply (a copy).
func (s *Store) ReplayBegin(sender string, id [16]byte, expires time.Time) (ReplayState, []byte, error) {
	if err := s.writable(); err != nil {
		return 0, nil, err
	}
	key := replayKey(sender, id)
	var state ReplayState
	var reply []byte
	err := s.group().run(func(tx *bolt.Tx) error {
		b := bucket(tx, bReplay)
		if raw := b.Get(key); raw != nil {
			var r replayRecord
			if err := decode(raw, &r); err != nil {
				return err
			}
			state, reply = ReplayState(r.State), clone(r.Reply)
			return nil
		}
		state, reply = ReplayNew, nil
		exp := expires.UnixMilli()
		if err := b.Put(key, encode(replayRecord{State: uint8(ReplayInProgress), Expires: exp})); err != nil {
			return err
		}
		return bucket(tx, bReplayExp).Put(expKey(exp, key), nil)
	})
	if err != nil {
		return 0, nil, amp.AsError(wrapTx(err))
	}
	return state, reply, nil
}

// ReplayLookup returns the state of (sender, id) without writing anything
// (ReplayNew when the message was not seen).
func (s *Store) ReplayLookup(sender string, id [16]byte) (ReplayState, []byte, error) {
	var state ReplayState
	var reply []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := bucket(tx, bReplay).Get(replayKey(sender, id))
		if raw == nil {
			state = ReplayNew
			return nil
		}
		var r replayRecord
		if err := decode(raw, &r); err != nil {
			return err
		}
		state, reply = ReplayState(r.State), clone(r.Reply)
		return nil
	})
	if err != nil {
		return 0, nil, amp.AsError(wrapTx(err))
	}
	return state, reply, nil
}

// ReplayComplete durably stores the reply of (sender, id).
func (s *Store) ReplayComplete(sender string, id [16]byte, reply []byte, expires time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	key := replayKey(sender, id)
	exp := expires.UnixMilli()
	err := s.group().run(func(tx *bolt.Tx) error {
		b := bucket(tx, bReplay)
		if raw := b.Get(key); raw != nil {
			var r replayRecord
			if err := decode(raw, &r); err != nil {
				return err
			}
			if r.Expires != exp {
				if err := bucket(tx, bReplayExp).Delete(expKey(r.Expires, key)); err != nil {
					return err
				}
			}
		}
		if err := b.Put(key, encode(replayRecord{State: uint8(ReplayDone), Expires: exp, Reply: reply})); err != nil {
			return err
		}
		return bucket(tx, bReplayExp).Put(expKey(exp, key), nil)
	})
	if err != nil {
		return amp.AsError(wrapTx(err))
	}
	return nil
}

// ReplaySweep deletes the entries that expired before now and returns how
// many it deleted (at most max per call; max <= 0 means 10,000).
func (s *Store) ReplaySweep(now time.Time, max int) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if max <= 0 {
		max = 10_000
	}
	n := 0
	limit := expKey(now.UnixMilli(), nil)
	err := s.group().run(func(tx *bolt.Tx) error {
		n = 0
		idx, b := bucket(tx, bReplayExp), bucket(tx, bReplay)
		var drop [][]byte
		c := idx.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k[:8], limit) < 0 && len(drop) < max; k, _ = c.Next() {
			drop = append(drop, clone(k))
		}
		for _, k := range drop {
			if err := idx.Delete(k); err != nil {
				return err
			}
			// Delete the entry only if this index row is its current one.
			key := k[8:]
			if raw := b.Get(key); raw != nil {
				var r replayRecord
				if decode(raw, &r) == nil && bytes.Equal(expKey(r.Expires, key), k) {
					if err := b.Delete(key); err != nil {
						return err
					}
				}
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, amp.AsError(wrapTx(err))
	}
	return n, nil
}

// ReplayLen returns the number of entries in the replay cache.
func (s *Store) ReplayLen() int {
	n := 0
	s.db.View(func(tx *bolt.Tx) error { n = bucket(tx, bReplay).Stats().KeyN; return nil })
	return n
}

// Group commit.

type groupOp struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// groupCommitter runs many small updates in one bbolt transaction: the
// first writer starts a commit with whatever has queued; writers that
// arrive meanwhile wait for the next one. No timer: a lone writer commits
// at once. Each function must be idempotent (a failed batch is retried one
// function at a time, so that one bad function fails only itself).
type groupCommitter struct {
	db      *bolt.DB
	mu      sync.Mutex
	queue   []groupOp
	running bool
}

func (s *Store) group() *groupCommitter {
	s.groupOnce.Do(func() { s.committer = &groupCommitter{db: s.db} })
	return s.committer
}

func (g *groupCommitter) run(fn func(*bolt.Tx) error) error {
	op := groupOp{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, op)
	if !g.running {
		g.running = true
		go g.loop()
	}
	g.mu.Unlock()
	return <-op.done
}

// maxGroup bounds one commit.
const maxGroup = 1024

func (g *groupCommitter) loop() {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		n := len(g.queue)
		if n > maxGroup {
			n = maxGroup
		}
		batch := append([]groupOp(nil), g.queue[:n]...)

		g.queue = append(g.queue[:0], g.queue[n:]...)
		g.mu.Unlock()
		err := g.db.Update(func(tx *bolt.Tx) error {
			// Replay keys grow with time (ids start with their timestamp),
			// so pages fill from the right: fill them fully before splitting.
			bucket(tx, bReplay).FillPercent = 0.95
			bucket(tx, bReplayExp).FillPercent = 0.95
			for _, op := range batch {
				if err := op.fn(tx); err != nil {
					return err
				}
			}
			return nil
		})

		if err == nil {
			for _, op := range batch {
				op.done <- nil
			}
			continue
		}
		// Retry one at a time so a failing function fails only itself.
		for _, op := range batch {
			op.done <- g.db.Update(op.fn)
		}
	}
}
